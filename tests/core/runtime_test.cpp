// core/runtime.h: the declared environment variables are read live with their source recorded,
// a flag/config override wins over the environment, defaults are recorded as defaults, settings
// keep their order and sources, undeclared names are refused, and the report shows all of it.
#include "core/runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>

#include "core/cpu.h"
#include "core/error.h"

namespace olmo {
namespace {

// Sets (or unsets, value nullptr) a variable for one test and restores it.
struct EnvGuard {
  std::string name;
  std::optional<std::string> old;
  EnvGuard(const char* n, const char* value) : name(n) {
    if (const char* o = std::getenv(n)) old = o;  // the test's own bookkeeping, not src/
    if (value) ::setenv(n, value, 1);
    else ::unsetenv(n);
  }
  ~EnvGuard() {
    if (old) ::setenv(name.c_str(), old->c_str(), 1);
    else ::unsetenv(name.c_str());
  }
};

TEST(Runtime, EnvIsReadLiveAndEmptyIsKept) {
  Runtime rt;
  {
    EnvGuard g("OLMO_MIXES_DIR", nullptr);
    EXPECT_FALSE(rt.env("OLMO_MIXES_DIR").has_value());
  }
  {
    EnvGuard g("OLMO_MIXES_DIR", "/mixes/here");
    EXPECT_EQ(rt.env("OLMO_MIXES_DIR"), "/mixes/here");
  }
  {
    EnvGuard g("OLMO_MIXES_DIR", "");
    ASSERT_TRUE(rt.env("OLMO_MIXES_DIR").has_value());  // set but empty: "" (not unset)
    EXPECT_EQ(*rt.env("OLMO_MIXES_DIR"), "");
  }
}

TEST(Runtime, UndeclaredVariableIsRefused) {
  Runtime rt;
  try {
    rt.env("OLMO_NOT_A_VARIABLE");
    FAIL() << "an undeclared variable was read";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("OLMO_NOT_A_VARIABLE"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("src/core/runtime.cpp"), std::string::npos) << e.what();
  }
  EXPECT_THROW(rt.env_or_default("x", "HOME", "d"), std::logic_error);
  EXPECT_THROW(rt.override_env("PATH", "v", Source::flag, "--path"), std::logic_error);
}

TEST(Runtime, EnvOrDefaultRecordsItsSource) {
  Runtime rt;
  {
    EnvGuard g("OLMO_TOKENIZER", nullptr);
    EXPECT_EQ(rt.env_or_default("tokenizer", "OLMO_TOKENIZER", "/default/tok"), "/default/tok");
    auto s = rt.find("tokenizer");
    ASSERT_TRUE(s.has_value());
    EXPECT_EQ(s->value, "/default/tok");
    EXPECT_EQ(s->source, Source::default_value);
    EXPECT_EQ(s->origin, "OLMO_TOKENIZER unset");
  }
  {
    EnvGuard g("OLMO_TOKENIZER", "");  // empty counts as unset, as the callers did before
    EXPECT_EQ(rt.env_or_default("tokenizer", "OLMO_TOKENIZER", "/default/tok"), "/default/tok");
    EXPECT_EQ(rt.find("tokenizer")->source, Source::default_value);
  }
  {
    EnvGuard g("OLMO_TOKENIZER", "/from/env.tiktoken");
    EXPECT_EQ(rt.env_or_default("tokenizer", "OLMO_TOKENIZER", "/default/tok"),
              "/from/env.tiktoken");
    auto s = rt.find("tokenizer");
    EXPECT_EQ(s->value, "/from/env.tiktoken");
    EXPECT_EQ(s->source, Source::env);
    EXPECT_EQ(s->origin, "OLMO_TOKENIZER");
  }
  EXPECT_EQ(rt.settings().size(), 1u);  // one entry, replaced each time
}

TEST(Runtime, FlagOverrideWinsOverEnv) {
  Runtime rt;
  EnvGuard g("OLMO_EVAL_DATA", "/env/eval");
  rt.override_env("OLMO_EVAL_DATA", "/flag/eval", Source::flag, "--eval-data");
  EXPECT_EQ(rt.env("OLMO_EVAL_DATA"), "/flag/eval");
  EXPECT_EQ(rt.env_or_default("eval_data", "OLMO_EVAL_DATA", "/default"), "/flag/eval");
  auto s = rt.find("eval_data");
  EXPECT_EQ(s->source, Source::flag);
  EXPECT_EQ(s->origin, "--eval-data");
  const std::string rep = rt.report();
  EXPECT_NE(rep.find("OLMO_EVAL_DATA = /flag/eval  [flag --eval-data]"), std::string::npos) << rep;
  rt.override_env("OLMO_EVAL_DATA", "/config/eval", Source::config, "eval.data_dir");
  EXPECT_EQ(rt.env("OLMO_EVAL_DATA"), "/config/eval");  // a later override replaces it
  rt.clear_override("OLMO_EVAL_DATA");
  EXPECT_EQ(rt.env("OLMO_EVAL_DATA"), "/env/eval");
  EXPECT_EQ(rt.env_or_default("eval_data", "OLMO_EVAL_DATA", "/default"), "/env/eval");
  EXPECT_EQ(rt.find("eval_data")->source, Source::env);
}

TEST(Runtime, SettingsKeepOrderAndReplace) {
  Runtime rt;
  rt.set({"precision", "bf16_mixed", Source::probe, "GEMM probe 512x512x512", "why",
          {{"bf16_gflops", 109}, {"fp32_gflops", 100}}});
  rt.set({"threads", "2", Source::config, "trainer.threads", "", {}});
  rt.set({"precision", "fp32", Source::config, "model.precision", "", {}});
  const auto all = rt.settings();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].name, "precision");  // first set first, value replaced in place
  EXPECT_EQ(all[0].value, "fp32");
  EXPECT_EQ(all[0].source, Source::config);
  EXPECT_EQ(all[1].name, "threads");
  EXPECT_FALSE(rt.find("attention").has_value());
}

TEST(Runtime, ReportShowsEverything) {
  Runtime rt;
  EnvGuard g("OLMO_ATTN_BF16", "0");
  EnvGuard u("OLMO_RESIZE_REQUEST", nullptr);
  rt.set({"attention", "fp32", Source::probe, "attention probe T=1024 H=4 hd=64 fwd+bwd",
          "attention (bf16_mixed): fp32 kernels (probe ...)",
          {{"bf16_gflops", 120}, {"fp32_gflops", 170}}});
  const std::string rep = rt.report();
  EXPECT_NE(rep.find(cat("detected_isa = ", isa_name(detected_isa()))), std::string::npos) << rep;
  EXPECT_NE(rep.find(cat("\n  isa = ", isa_name(active_isa()))), std::string::npos) << rep;
  EXPECT_NE(rep.find("threads = "), std::string::npos) << rep;
  EXPECT_NE(rep.find("attention = fp32  [probe attention probe T=1024 H=4 hd=64 fwd+bwd]"),
            std::string::npos) << rep;
  EXPECT_NE(rep.find("attention (bf16_mixed): fp32 kernels (probe ...)"), std::string::npos);
  EXPECT_NE(rep.find("figures: bf16_gflops=120 fp32_gflops=170"), std::string::npos) << rep;
  EXPECT_NE(rep.find("OLMO_ATTN_BF16 = 0  [env]"), std::string::npos) << rep;
  EXPECT_NE(rep.find("OLMO_RESIZE_REQUEST unset"), std::string::npos) << rep;
  for (const EnvVar& v : declared_env()) {  // every declared variable is listed (hooks: if set)
    if (std::string(v.name).rfind("OLMO_TEST_", 0) != 0) {
      EXPECT_NE(rep.find(cat("  ", v.name, " ")), std::string::npos) << v.name;
    }
  }
}

// The test hooks (OLMO_TEST_*: fault injection) are no user settings: an unset one is left out
// of the report (one line counts them), a set one is shown with its value.
TEST(Runtime, ReportListsTestHooksOnlyWhenSet) {
  Runtime rt;
  EnvGuard set("OLMO_TEST_NAN", "step=3");
  EnvGuard unset("OLMO_TEST_KILL", nullptr);
  const std::string rep = rt.report();
  EXPECT_NE(rep.find("OLMO_TEST_NAN = step=3  [env]"), std::string::npos) << rep;
  EXPECT_EQ(rep.find("OLMO_TEST_KILL"), std::string::npos) << rep;
  EXPECT_NE(rep.find("OLMO_TEST_* test hooks unset"), std::string::npos) << rep;
}

TEST(Runtime, EnvironmentListsTheProcessEnvironment) {
  Runtime rt;
  EnvGuard g("OLMO_LAUNCH_JOB", "41");
  const auto env = rt.environment();
  EXPECT_NE(std::find(env.begin(), env.end(), "OLMO_LAUNCH_JOB=41"), env.end());
}

// The process's Runtime is the one the code reads: the ISA it dispatches on (core/cpu.cpp reads
// OLMO_ISA through it) is the one its report shows.
TEST(Runtime, ProcessRuntimeReportsTheActiveIsa) {
  EXPECT_EQ(&runtime(), &runtime());
  const std::string rep = runtime_report();
  EXPECT_NE(rep.find(cat("\n  isa = ", isa_name(active_isa()))), std::string::npos) << rep;
}

}  // namespace
}  // namespace olmo
