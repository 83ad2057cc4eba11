// SwiGLU: fast path under each ISA vs the double reference (including large |gate| where the
// vector exp saturates), gradient check of the reference backward.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/cpu.h"
#include "kernels/isa_util.h"
#include "kernels/gradcheck.h"
#include "kernels/swiglu.h"

using namespace olmo::kernels;
using olmo::testing::randn;
using olmo::testing::to;

using olmo::testing::isas;
using olmo::testing::IsaGuard;

namespace {
}  // namespace

TEST(SwiGlu, FastMatchesReferenceUnderEachIsa) {
  IsaGuard g;
  for (int64_t n : {1, 7, 16, 31, 1000, 70001}) {
    auto gate = randn(n, n, 4.0), up = randn(n, n + 1), dout = randn(n, n + 2);
    if (n >= 7) {  // extremes: saturation of sigmoid / exp clamp
      gate[0] = 100.0; gate[1] = -100.0; gate[2] = 88.5; gate[3] = -88.5; gate[4] = 0.0;
      gate[5] = 1e-30; gate[6] = -20.0;
    }
    std::vector<double> o_ref(n), dg_ref(n), du_ref(n);
    swiglu_forward_ref(gate.data(), up.data(), o_ref.data(), n);
    swiglu_backward_ref(gate.data(), up.data(), dout.data(), dg_ref.data(), du_ref.data(), n);
    auto gf = to<float>(gate), uf = to<float>(up), df = to<float>(dout);
    for (auto isa : isas()) {
      olmo::set_isa_override(isa);
      std::vector<float> o(n), dg(n), du(n);
      swiglu_forward(gf.data(), uf.data(), o.data(), n);
      swiglu_backward(gf.data(), uf.data(), df.data(), dg.data(), du.data(), n);
      // Elementwise: a few ulp of the result plus a tiny absolute floor.
      std::vector<double> od(o.begin(), o.end()), dgd(dg.begin(), dg.end()),
          dud(du.begin(), du.end());
      const char* nm = olmo::isa_name(isa);
      EXPECT_LT(olmo::testing::max_scaled_err(od, o_ref, 1e-6, 1e-30), 1.0) << nm << " n=" << n;
      EXPECT_LT(olmo::testing::max_scaled_err(dud, du_ref, 1e-6, 1e-30), 1.0) << nm << " n=" << n;
      // dgate = dout*up*s*(1 + g(1-s)) cancels near g = -1.28: bound the error by the size of
      // the terms, |dout*up| * (1 + |g|) * eps, not by the (possibly tiny) result.
      for (int64_t i = 0; i < n; ++i) {
        double tol = 2e-6 * std::fabs(dg_ref[i]) + 1e-6 * std::fabs(dout[i] * up[i]) *
                                                       (1 + std::fabs(gate[i])) * 0.25;
        ASSERT_LE(std::fabs(dgd[i] - dg_ref[i]), tol + 1e-30)
            << nm << " n=" << n << " i=" << i << " gate=" << gate[i];
      }
    }
  }
}

TEST(SwiGlu, GradientCheckInDouble) {
  const int64_t n = 13;
  auto gate = randn(n, 1, 3.0), up = randn(n, 2), R = randn(n, 3);
  auto loss = [&](const std::vector<double>& g, const std::vector<double>& u) {
    std::vector<double> o(n);
    swiglu_forward_ref(g.data(), u.data(), o.data(), n);
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += o[i] * R[i];
    return s;
  };
  auto ng = olmo::testing::numeric_grad([&](const std::vector<double>& v) { return loss(v, up); }, gate);
  auto nu = olmo::testing::numeric_grad([&](const std::vector<double>& v) { return loss(gate, v); }, up);
  std::vector<double> dg(n), du(n);
  swiglu_backward_ref(gate.data(), up.data(), R.data(), dg.data(), du.data(), n);
  EXPECT_LT(olmo::testing::max_scaled_err(dg, ng, 1e-6, 1e-8), 1.0);
  EXPECT_LT(olmo::testing::max_scaled_err(du, nu, 1e-6, 1e-8), 1.0);
}
