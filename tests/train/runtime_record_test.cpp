// The picks made at run start are recorded in core/runtime.h by their caller (src/train), with
// their source and figures, and printed there (the kernels only return them): the precision
// pick (choose_precision) and bf16_mixed's attention kernels (report_attention_choice), whose
// printed line is the one users and bench/results read.
// A fresh process per binary: both picks are made once per process, so the switches are set
// before the first pick.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/runtime.h"
#include "train/config.h"
#include "train/model_setup.h"

namespace olmo::train {
namespace {

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

// OLMO_ATTN_BF16=0: the attention line names the variable, printed once however often the
// caller asks; the Runtime's "attention" entry has source env OLMO_ATTN_BF16.
TEST(RuntimeRecord, AttentionChoiceRecordedAndPrintedOnceByTheCaller) {
  ::setenv("OLMO_ATTN_BF16", "0", 1);
  testing::internal::CaptureStderr();
  report_attention_choice();
  report_attention_choice();
  const std::string err = testing::internal::GetCapturedStderr();
  ::unsetenv("OLMO_ATTN_BF16");
  const std::string line = "attention (bf16_mixed): fp32 kernels (OLMO_ATTN_BF16=0)\n";
  EXPECT_EQ(count(err, line), 1) << err;
  const auto s = runtime().find("attention");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->value, "fp32");
  EXPECT_EQ(s->source, Source::env);
  EXPECT_EQ(s->origin, "OLMO_ATTN_BF16");
  EXPECT_EQ(s->note + "\n", line);
  EXPECT_NE(runtime_report().find("attention = fp32  [env OLMO_ATTN_BF16]"), std::string::npos)
      << runtime_report();
}

// model.precision=auto with the probe's timing forced to 110/100 (bf16 usable through
// OLMO_BF16=emulate where the CPU has no AVX512_BF16): the pick is bf16_mixed, recorded as a
// probe with its figures; the printed line is unchanged.
TEST(RuntimeRecord, PrecisionProbeRecordedWithItsFigures) {
  ::setenv("OLMO_BF16", "emulate", 1);
  ::setenv("OLMO_TEST_PRECISION_PROBE", "110/100", 1);
  Config c;
  apply_override(c, "model.precision=auto");
  testing::internal::CaptureStderr();
  const PrecisionChoice p = choose_precision(c);
  const std::string err = testing::internal::GetCapturedStderr();
  ::unsetenv("OLMO_TEST_PRECISION_PROBE");
  ::unsetenv("OLMO_BF16");
  EXPECT_EQ(p.precision, model::Precision::bf16_mixed);
  EXPECT_EQ(count(err, "precision: auto -> bf16_mixed ("), 1) << err;
  const auto s = runtime().find("precision");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->value, "bf16_mixed");
  EXPECT_EQ(s->source, Source::probe);
  EXPECT_EQ(s->note, p.why);
  ASSERT_EQ(s->figures.size(), 4u);
  EXPECT_EQ(s->figures[0].first, "bf16_gflops");
  EXPECT_DOUBLE_EQ(s->figures[0].second, 110.0);
  EXPECT_DOUBLE_EQ(s->figures[1].second, 100.0);
  const std::string rep = runtime_report();
  EXPECT_NE(rep.find("precision = bf16_mixed  [probe GEMM probe "), std::string::npos) << rep;
  EXPECT_NE(rep.find("figures: bf16_gflops=110 fp32_gflops=100 ratio=1.1 needs=1.1"),
            std::string::npos) << rep;
}

}  // namespace
}  // namespace olmo::train
