// AdamW: the OpenMP flat-buffer step equals the scalar reference bit for bit (several groups,
// weight decay 0 and 0.1, a group large enough to run multithreaded); both agree with a
// double-precision textbook AdamW to fp32 accuracy; a skipped step changes nothing; state JSON
// round-trips; bad layouts and mismatched state are refused with a message naming the field.
// (Bit parity with OLMo-core's SkipStepAdamW itself: tests/optim/olmo_core_parity.py.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/error.h"
#include "optim/adamw.h"

using namespace olmo::optim;

namespace {
std::vector<float> randn(size_t n, float scale, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}
}  // namespace

TEST(AdamW, FlatStepMatchesReferenceBitwise) {
  const size_t n_emb = 1000, n_big = 200003, n_norm = 17, n = n_emb + n_big + n_norm + 5;  // 5 ungrouped
  std::vector<ParamGroup> groups = {{0, n_emb, 0.0, "embeddings"}, {n_emb, n_big, 0.1, "default"},
                                    {n_emb + n_big, n_norm, 0.1, "norms"}};
  AdamW opt(n, groups);
  std::vector<float> p = randn(n, 0.02f, 1), pref = p;
  std::vector<float> m(n, 0.f), v(n, 0.f);
  std::vector<float> steps(groups.size(), 0.f);
  for (int s = 1; s <= 12; ++s) {
    std::vector<float> g = randn(n, 0.01f * s, 100 + s);
    const double lr = 1e-3 * s / 12.0;
    const bool skip = (s == 7);
    opt.step(p.data(), g.data(), lr, skip);
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      const auto& gr = groups[gi];
      adamw_reference(pref.data() + gr.offset, g.data() + gr.offset, m.data() + gr.offset, v.data() + gr.offset,
                      gr.numel, steps[gi], lr, gr.weight_decay, AdamWConfig{}, skip);
    }
  }
  EXPECT_EQ(0, std::memcmp(p.data(), pref.data(), n * 4));
  EXPECT_EQ(0, std::memcmp(opt.exp_avg(), m.data(), n * 4));
  EXPECT_EQ(0, std::memcmp(opt.exp_avg_sq(), v.data(), n * 4));
  EXPECT_EQ(opt.steps(), steps);
  EXPECT_EQ(opt.steps()[0], 11.0f);  // 12 steps, one skipped
  std::vector<float> init = randn(n, 0.02f, 1);
  for (size_t i = n - 5; i < n; ++i) EXPECT_EQ(p[i], init[i]) << "ungrouped element changed";
}

TEST(AdamW, MatchesDoublePrecisionTextbook) {
  const size_t n = 300;
  AdamW opt(n, {{0, n, 0.1, "all"}});
  std::vector<float> p = randn(n, 0.5f, 3);
  std::vector<double> pd(p.begin(), p.end()), md(n, 0), vd(n, 0);
  const double b1 = 0.9, b2 = 0.95, eps = 1e-8, wd = 0.1;
  for (int s = 1; s <= 30; ++s) {
    std::vector<float> g = randn(n, 1.0f, 50 + s);
    const double lr = 1e-2;
    opt.step(p.data(), g.data(), lr);
    for (size_t i = 0; i < n; ++i) {
      pd[i] *= 1 - lr * wd;
      md[i] = b1 * md[i] + (1 - b1) * g[i];
      vd[i] = b2 * vd[i] + (1 - b2) * double(g[i]) * g[i];
      const double mh = md[i] / (1 - std::pow(b1, s)), denom = std::sqrt(vd[i]) / std::sqrt(1 - std::pow(b2, s)) + eps;
      pd[i] -= lr * mh / denom;
    }
  }
  double worst = 0;
  for (size_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(p[i] - pd[i]) / (std::abs(pd[i]) + 1e-3));
  EXPECT_LT(worst, 2e-5);
}

TEST(AdamW, SkippedStepChangesNothing) {
  const size_t n = 100;
  AdamW opt(n, {{0, n, 0.1, "all"}});
  std::vector<float> p = randn(n, 0.1f, 4), g = randn(n, 0.1f, 5);
  opt.step(p.data(), g.data(), 1e-3);
  const std::vector<float> p0 = p, m0(opt.exp_avg(), opt.exp_avg() + n), v0(opt.exp_avg_sq(), opt.exp_avg_sq() + n);
  std::vector<float> bad(n, std::nanf(""));
  opt.step(p.data(), bad.data(), 1e-3, /*skip=*/true);
  EXPECT_EQ(p, p0);
  EXPECT_EQ(std::vector<float>(opt.exp_avg(), opt.exp_avg() + n), m0);
  EXPECT_EQ(std::vector<float>(opt.exp_avg_sq(), opt.exp_avg_sq() + n), v0);
  EXPECT_EQ(opt.steps()[0], 1.0f);
}

TEST(AdamW, StateJsonRoundTripAndMismatch) {
  AdamW a(50, {{0, 10, 0.0, "emb"}, {10, 40, 0.1, "default"}});
  std::vector<float> p(50, 0.1f), g(50, 0.01f);
  for (int i = 0; i < 3; ++i) a.step(p.data(), g.data(), 1e-3);
  AdamW b(50, {{0, 10, 0.0, "emb"}, {10, 40, 0.1, "default"}});
  b.load_state_json(nlohmann::json::parse(a.state_json().dump()));
  EXPECT_EQ(b.steps(), a.steps());
  AdamW c(50, {{0, 20, 0.0, "emb"}, {20, 30, 0.1, "default"}});
  try {
    c.load_state_json(a.state_json());
    FAIL() << "layout mismatch accepted";
  } catch (const olmo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("groups[0]"), std::string::npos) << e.what();
  }
  AdamW d(60, {{0, 60, 0.1, "all"}});
  EXPECT_THROW(d.load_state_json(a.state_json()), olmo::Error);
}

TEST(AdamW, BadLayoutsRefused) {
  EXPECT_THROW(AdamW(10, {{5, 6, 0.1, "x"}}), olmo::Error);
  try {
    AdamW(10, {{0, 6, 0.1, "a"}, {5, 5, 0.1, "b"}});
    FAIL();
  } catch (const olmo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("overlaps"), std::string::npos) << e.what();
  }
  EXPECT_THROW(AdamW(10, {{0, 10, 0.1, "a"}}, AdamWConfig{1.5, 0.95, 1e-8}), olmo::Error);
}
