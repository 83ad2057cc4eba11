// Gradient clipping: the blocked double norm against a long-double reference on odd sizes, the
// same bits for 1 and 2 OpenMP threads, torch's clip coefficient formula (max/(norm+1e-6),
// clamped to 1, in fp32), untouched gradients below the threshold, NaN propagation.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <random>
#include <vector>

#include "optim/grad_clip.h"

using namespace olmo::optim;

TEST(GradClip, NormMatchesLongDouble) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 0.3f);
  for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(65536), size_t(65537), size_t(300001)}) {
    std::vector<float> g(n);
    for (auto& x : g) x = nd(rng);
    long double s = 0;
    for (float x : g) s += (long double)x * x;
    EXPECT_EQ(total_grad_norm(g.data(), n), static_cast<float>(std::sqrt(s))) << n;
  }
}

TEST(GradClip, DeterministicAcrossThreadCounts) {
  std::mt19937 rng(8);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> g(1000003);
  for (auto& x : g) x = nd(rng);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const float a = total_grad_norm(g.data(), g.size());
  omp_set_num_threads(2);
  const float b = total_grad_norm(g.data(), g.size());
  omp_set_num_threads(saved);
  EXPECT_EQ(a, b);
}

TEST(GradClip, CoefficientAsTorch) {
  std::vector<float> g = {3.f, 4.f};  // norm 5
  const float norm = clip_grad_norm(g.data(), 2, 1.0);
  EXPECT_EQ(norm, 5.0f);
  const float coef = (1.0f / (5.0f + 1e-6f)) * 1.0f;
  EXPECT_EQ(g[0], 3.f * coef);
  EXPECT_EQ(g[1], 4.f * coef);
  std::vector<float> h = {0.3f, 0.4f};  // norm 0.5 < 1: coef clamps to 1, untouched
  EXPECT_EQ(clip_grads_with_norm(h.data(), 2, 1.0, total_grad_norm(h.data(), 2)), 1.0f);
  EXPECT_EQ(h[0], 0.3f);
  EXPECT_EQ(h[1], 0.4f);
  std::vector<float> k = {1.f, std::nanf("")};
  EXPECT_TRUE(std::isnan(clip_grad_norm(k.data(), 2, 1.0)));
  EXPECT_TRUE(std::isnan(k[0]));  // torch: clamp keeps NaN, grads become NaN
}
