// ISA dispatch: the override clamps to the detected ISA; pick() (OLMO_DISPATCH) follows
// active_isa(), so each override reaches its own stamped copy; every elementwise kernel under
// each ISA matches a double reference on odd sizes (tails) and offsets (unaligned pointers);
// sum_squares is deterministic across thread counts.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <vector>

#include "core/cpu.h"
#include "kernels/dispatch.h"
#include "kernels/isa_util.h"
#include "kernels/elementwise.h"
#include "kernels/gradcheck.h"

using namespace olmo::kernels;
using olmo::testing::randn;
using olmo::testing::to;

using olmo::testing::isas;
using olmo::testing::IsaGuard;

namespace {
}  // namespace

TEST(Dispatch, OverrideIsClampedAndCleared) {
  IsaGuard g;
  olmo::set_isa_override(olmo::Isa::scalar);
  EXPECT_EQ(olmo::active_isa(), olmo::Isa::scalar);
  olmo::set_isa_override(olmo::Isa::avx512);
  EXPECT_EQ(olmo::active_isa(), olmo::detected_isa());
  olmo::clear_isa_override();
  EXPECT_LE(int(olmo::active_isa()), int(olmo::detected_isa()));
}

TEST(Dispatch, PickFollowsActiveIsa) {
  IsaGuard g;
  for (auto isa : isas()) {
    olmo::set_isa_override(isa);
    EXPECT_EQ(pick(0, 1, 2), static_cast<int>(isa)) << olmo::isa_name(isa);
  }
}

TEST(Dispatch, ElementwiseMatchReferenceUnderEachIsa) {
  IsaGuard g;
  for (int64_t n : {1, 5, 8, 15, 17, 33, 100003}) {
    for (int64_t off : {0, 1, 3}) {
      auto a = randn(n + off, 1 + n), b = randn(n + off, 2 + n);
      for (auto isa : isas()) {
        olmo::set_isa_override(isa);
        auto af = to<float>(a), bf = to<float>(b);
        const char* nm = olmo::isa_name(isa);
        auto y = af;
        add_inplace(y.data() + off, bf.data() + off, n);
        for (int64_t i = 0; i < off; ++i) EXPECT_EQ(y[i], af[i]);
        for (int64_t i = off; i < n + off; ++i) ASSERT_EQ(y[i], af[i] + bf[i]) << nm << " " << n;
        std::vector<float> o(n + off, -7.0f);
        add(o.data() + off, af.data() + off, bf.data() + off, n);
        for (int64_t i = off; i < n + off; ++i) ASSERT_EQ(o[i], af[i] + bf[i]) << nm;
        y = af;
        axpy(y.data() + off, 0.37f, bf.data() + off, n);
        for (int64_t i = off; i < n + off; ++i)
          ASSERT_NEAR(y[i], a[i] + 0.37 * double(bf[i]), 1e-6 * (1 + std::fabs(y[i]))) << nm;
        y = af;
        scale_inplace(y.data() + off, -1.5f, n);
        for (int64_t i = off; i < n + off; ++i) ASSERT_EQ(y[i], af[i] * -1.5f) << nm;
        double ss = 0;
        for (int64_t i = off; i < n + off; ++i) ss += double(af[i]) * double(af[i]);
        EXPECT_NEAR(sum_squares(af.data() + off, n), ss, 1e-12 * ss) << nm << " n=" << n;
      }
    }
  }
}

TEST(Dispatch, SumSquaresDeterministicAcrossThreads) {
  auto x = to<float>(randn(1000003, 9));
  int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  double s1 = sum_squares(x.data(), int64_t(x.size()));
  omp_set_num_threads(2);
  double s2 = sum_squares(x.data(), int64_t(x.size()));
  omp_set_num_threads(saved);
  EXPECT_EQ(s1, s2);
}
