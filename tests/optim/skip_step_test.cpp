// Skip-step rule: inactive until 64 values are held (current included), then a 6-sigma loss or
// grad-norm outlier is skipped while ordinary values pass; the window keeps 129 values; NaN
// skips; std_mean matches a double two-pass unbiased std/mean; state JSON round-trips to the same
// decisions; bad state is refused naming the field. (Against OLMo-core itself:
// tests/optim/olmo_core_parity.py, which skips one loss and one grad-norm spike.)
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/error.h"
#include "optim/skip_step.h"

using namespace olmo::optim;

TEST(SkipStep, ActivationAndOutliers) {
  SkipStep s;
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.f, 0.01f);
  for (int i = 0; i < 62; ++i) EXPECT_TRUE(s.record(3.f + nd(rng), 1.f + nd(rng)));
  EXPECT_TRUE(s.record(100.f, 1.f)) << "63 values held: rule not active yet";
  SkipStep t;
  for (int i = 0; i < 63; ++i) t.record(3.f + nd(rng), 1.f + nd(rng));
  EXPECT_FALSE(t.record(100.f, 1.f)) << "64 values held: loss spike must be skipped";
  EXPECT_FALSE(t.step_factor());
  EXPECT_TRUE(t.record(3.f, 1.f));
  EXPECT_FALSE(t.record(3.f, 1000.f)) << "grad-norm spike must be skipped";
  EXPECT_FALSE(t.record(std::nanf(""), 1.f)) << "NaN loss must be skipped";
}

TEST(SkipStep, WindowLength) {
  SkipStep s(128, 6.0);
  for (int i = 0; i < 500; ++i) s.record(float(i), float(i));
  ASSERT_EQ(s.losses().size(), 129u);
  EXPECT_EQ(s.losses().front(), 371.f);
  EXPECT_EQ(s.grad_norms().size(), 129u);
  SkipStep lossonly;
  for (int i = 0; i < 70; ++i) lossonly.record(1.f + 0.01f * (i % 3), std::nullopt);
  EXPECT_TRUE(lossonly.grad_norms().empty());
  EXPECT_FALSE(lossonly.record(50.f, std::nullopt));
}

TEST(SkipStep, StdMeanMatchesTwoPass) {
  std::mt19937 rng(2);
  std::normal_distribution<float> nd(2.f, 0.7f);
  std::vector<float> x(128);
  for (auto& v : x) v = nd(rng);
  double mean = 0;
  for (float v : x) mean += v;
  mean /= x.size();
  double ss = 0;
  for (float v : x) ss += (v - mean) * (v - mean);
  float sd, mu;
  std_mean_f32(x.data(), x.size(), sd, mu);
  EXPECT_EQ(mu, static_cast<float>(mean));
  EXPECT_EQ(sd, static_cast<float>(std::sqrt(ss / (x.size() - 1))));
  std_mean_f32(x.data(), 1, sd, mu);
  EXPECT_TRUE(std::isnan(sd));  // torch: unbiased std of one value is nan
}

TEST(SkipStep, StateRoundTrip) {
  SkipStep a;
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.f, 0.1f);
  for (int i = 0; i < 100; ++i) a.record(2.f + nd(rng), 0.5f + nd(rng));
  a.record(std::nanf(""), 0.5f);
  SkipStep b;
  b.load_state_json(nlohmann::json::parse(a.state_json().dump()));
  ASSERT_EQ(a.losses().size(), b.losses().size());
  for (size_t i = 0; i + 1 < a.losses().size(); ++i) EXPECT_EQ(a.losses()[i], b.losses()[i]);
  EXPECT_TRUE(std::isnan(b.losses().back()));
  for (int i = 0; i < 150; ++i) {
    const float l = 2.f + nd(rng), g = 0.5f + nd(rng);
    EXPECT_EQ(a.record(l, g), b.record(l, g));
  }
  nlohmann::json bad = a.state_json();
  bad["losses"][3] = "x";
  try {
    b.load_state_json(bad);
    FAIL();
  } catch (const olmo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("losses[3]"), std::string::npos) << e.what();
  }
  SkipStep c(64, 6.0);
  EXPECT_THROW(c.load_state_json(a.state_json()), olmo::Error);
}
