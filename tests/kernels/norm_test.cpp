// RMSNorm: fast path (under each ISA) vs the double reference, gradient check of the reference
// backward by central differences, deterministic dw across thread counts, dw accumulation.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <vector>

#include "core/cpu.h"
#include "kernels/isa_util.h"
#include "kernels/gradcheck.h"
#include "kernels/norm.h"

using namespace olmo::kernels;
using olmo::testing::randn;
using olmo::testing::rel_l2;
using olmo::testing::to;

using olmo::testing::isas;
using olmo::testing::IsaGuard;

namespace {
double l2(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}
}  // namespace

TEST(RmsNorm, ForwardBackwardMatchReferenceUnderEachIsa) {
  IsaGuard g;
  for (auto [N, D] : {std::pair<int64_t, int64_t>{1, 1}, {3, 7}, {5, 17}, {64, 768}, {33, 100},
                      {130, 83}, {4, 1025}}) {
    auto x = randn(N * D, 1 + D, 2.0), w = randn(D, 2 + D), dy = randn(N * D, 3 + D);
    std::vector<double> y_ref(N * D), r_ref(N), dx_ref(N * D), dw_ref(D, 0.5);
    rmsnorm_forward_ref(x.data(), w.data(), y_ref.data(), r_ref.data(), N, D, 1e-6);
    rmsnorm_backward_ref(dy.data(), x.data(), w.data(), r_ref.data(), dx_ref.data(),
                         dw_ref.data(), N, D);
    auto xf = to<float>(x), wf = to<float>(w), dyf = to<float>(dy);
    for (auto isa : isas()) {
      olmo::set_isa_override(isa);
      std::vector<float> y(N * D), r(N), dx(N * D), dw(D, 0.5f);
      rmsnorm_forward(xf.data(), wf.data(), y.data(), r.data(), N, D, 1e-6f);
      rmsnorm_backward(dyf.data(), xf.data(), wf.data(), r.data(), dx.data(), dw.data(), N, D);
      const char* nm = olmo::isa_name(isa);
      EXPECT_LT(rel_l2(y, y_ref), 1e-6) << nm << " N=" << N << " D=" << D;
      EXPECT_LT(rel_l2(r, r_ref), 1e-6) << nm << " N=" << N << " D=" << D;
      // dx = r*w*dy - c*x cancels (exactly for D = 1): measure against the first term's size.
      std::vector<double> diff(N * D), first(N * D);
      for (int64_t i = 0; i < N * D; ++i) {
        diff[i] = double(dx[i]) - dx_ref[i];
        first[i] = r_ref[i / D] * w[i % D] * dy[i];
      }
      EXPECT_LT(l2(diff) / l2(first), 1e-6) << nm << " N=" << N << " D=" << D;
      EXPECT_LT(rel_l2(dw, dw_ref), 1e-5) << nm << " N=" << N << " D=" << D;
    }
  }
}

TEST(RmsNorm, GradientCheckInDouble) {
  const int64_t N = 3, D = 11;
  auto x = randn(N * D, 7), w = randn(D, 8), R = randn(N * D, 9);
  for (auto& v : w) v += 1.0;
  auto loss = [&](const std::vector<double>& xx, const std::vector<double>& ww) {
    std::vector<double> y(N * D), r(N);
    rmsnorm_forward_ref(xx.data(), ww.data(), y.data(), r.data(), N, D, 1e-6);
    double s = 0;
    for (int64_t i = 0; i < N * D; ++i) s += y[i] * R[i];
    return s;
  };
  auto gx = olmo::testing::numeric_grad([&](const std::vector<double>& v) { return loss(v, w); }, x);
  auto gw = olmo::testing::numeric_grad([&](const std::vector<double>& v) { return loss(x, v); }, w);
  std::vector<double> y(N * D), r(N), dx(N * D), dw(D, 0.0);
  rmsnorm_forward_ref(x.data(), w.data(), y.data(), r.data(), N, D, 1e-6);
  rmsnorm_backward_ref(R.data(), x.data(), w.data(), r.data(), dx.data(), dw.data(), N, D);
  EXPECT_LT(olmo::testing::max_scaled_err(dx, gx, 1e-6, 1e-8), 1.0);
  EXPECT_LT(olmo::testing::max_scaled_err(dw, gw, 1e-6, 1e-8), 1.0);
}

TEST(RmsNorm, WeightGradientIsDeterministicAcrossThreadCounts) {
  const int64_t N = 1000, D = 96;
  auto xf = to<float>(randn(N * D, 11)), wf = to<float>(randn(D, 12)),
       dyf = to<float>(randn(N * D, 13));
  std::vector<float> y(N * D), r(N), dx(N * D);
  rmsnorm_forward(xf.data(), wf.data(), y.data(), r.data(), N, D, 1e-6f);
  std::vector<std::vector<float>> dws;
  int saved = omp_get_max_threads();
  for (int t : {1, 2, 3}) {
    omp_set_num_threads(t);
    std::vector<float> dw(D, 0.0f);
    rmsnorm_backward(dyf.data(), xf.data(), wf.data(), r.data(), dx.data(), dw.data(), N, D);
    dws.push_back(dw);
  }
  omp_set_num_threads(saved);
  EXPECT_EQ(dws[0], dws[1]);
  EXPECT_EQ(dws[0], dws[2]);
}

TEST(RmsNorm, ZeroRowGivesFiniteOutput) {
  std::vector<float> x(8, 0.0f), w(8, 1.0f), y(8), r(1);
  rmsnorm_forward(x.data(), w.data(), y.data(), r.data(), 1, 8, 1e-6f);
  EXPECT_NEAR(r[0], 1000.0f, 0.01f);
  for (float v : y) EXPECT_EQ(v, 0.0f);
}
