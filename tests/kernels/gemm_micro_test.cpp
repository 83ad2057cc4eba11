// gemm_micro (our fp32 GEMM, gemm_micro.h) against gemm_ref on every ISA this CPU has
// (set_isa_override): all transposes, odd sizes (edge tiles in both directions, M and N below one
// tile), several kc / mc / nc blocks per dimension (small blockings), alpha / beta, ld strides,
// beta = 0 over NaN; no write outside C's M x N; the same bits for any ISA, thread count and
// mc / nc at one kc; gemm() equals gemm_micro.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <random>
#include <tuple>
#include <vector>

#include "kernels/gemm.h"
#include "kernels/gemm_micro.h"
#include "kernels/isa_util.h"

using olmo::kernels::gemm_micro;
using olmo::kernels::gemm_ref;
using olmo::kernels::GemmMicroBlocking;

namespace {

double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / (den + 1e-30));
}

struct Case {
  bool ta, tb;
  int64_t M, N, K, lda, ldb, ldc;
  std::vector<float> A, B, C;
};

Case make_case(bool ta, bool tb, int64_t M, int64_t N, int64_t K, int pad, uint32_t seed) {
  Case c{ta, tb, M, N, K, (ta ? M : K) + pad, (tb ? K : N) + 2 * pad, N + 3 * pad, {}, {}, {}};
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  c.A.resize(size_t((ta ? K : M) * c.lda));
  c.B.resize(size_t((tb ? N : K) * c.ldb));
  c.C.resize(size_t(M * c.ldc));
  for (auto& x : c.A) x = nd(rng);
  for (auto& x : c.B) x = nd(rng);
  for (auto& x : c.C) x = nd(rng);
  return c;
}

const GemmMicroBlocking kSmall{16, 12, 32};   // many kc / mc / nc blocks on small shapes
const GemmMicroBlocking kOdd{7, 5, 3};        // blocks below one tile: rounded up to MR / NR

}  // namespace

TEST(GemmMicro, MatchesReferenceEveryIsaTransposeAndBlocking) {
  olmo::testing::IsaGuard guard;
  for (olmo::Isa isa : olmo::testing::isas()) {
    olmo::set_isa_override(isa);
    for (const GemmMicroBlocking& blk : {GemmMicroBlocking{}, kSmall, kOdd})
      for (int ta = 0; ta < 2; ++ta)
        for (int tb = 0; tb < 2; ++tb)
          for (auto [M, N, K] : {std::tuple{1, 1, 1}, {7, 13, 5}, {6, 16, 16}, {64, 96, 130},
                                 {33, 257, 71}, {5, 40, 300}, {50, 3, 33}})
            for (auto [alpha, beta] : {std::pair{1.0f, 0.0f}, {0.5f, 2.0f}, {1.0f, 1.0f}}) {
              Case c = make_case(ta, tb, M, N, K, 3, uint32_t(M * 131 + N * 7 + K));
              std::vector<float> want = c.C;
              gemm_micro(c.ta, c.tb, M, N, K, alpha, c.A.data(), c.B.data(), beta, c.C.data(),
                         c.lda, c.ldb, c.ldc, blk);
              gemm_ref(c.ta, c.tb, M, N, K, alpha, c.A.data(), c.B.data(), beta, want.data(),
                       c.lda, c.ldb, c.ldc);
              // rel. L2 over all of C (the padding columns included: they must be untouched).
              EXPECT_LT(rel_l2(c.C, want), 1e-6)
                  << olmo::isa_name(isa) << " kc=" << blk.kc << " ta=" << ta << " tb=" << tb
                  << " M=" << M << " N=" << N << " K=" << K << " alpha=" << alpha
                  << " beta=" << beta;
              for (int64_t i = 0; i < M; ++i)
                for (int64_t j = N; j < c.ldc; ++j)
                  ASSERT_EQ(c.C[size_t(i * c.ldc + j)], want[size_t(i * c.ldc + j)])
                      << "wrote outside C at " << i << "," << j;
            }
  }
}

TEST(GemmMicro, BetaZeroIgnoresGarbageAndKZeroScales) {
  olmo::testing::IsaGuard guard;
  for (olmo::Isa isa : olmo::testing::isas()) {
    olmo::set_isa_override(isa);
    for (const GemmMicroBlocking& blk : {GemmMicroBlocking{}, kSmall}) {
      std::vector<float> A(9 * 20, 1.0f), B(20 * 17, 2.0f), C(9 * 17, NAN);
      gemm_micro(false, false, 9, 17, 20, 1.0f, A.data(), B.data(), 0.0f, C.data(), 0, 0, 0,
                 blk);
      for (float x : C) EXPECT_EQ(x, 40.0f) << olmo::isa_name(isa);
    }
    std::vector<float> C(6, 3.0f);
    gemm_micro(false, false, 2, 3, 0, 1.0f, nullptr, nullptr, 0.5f, C.data());
    for (float x : C) EXPECT_EQ(x, 1.5f);
  }
}

// Bits depend on kc only: any ISA, any thread count, any mc / nc give the same C.
TEST(GemmMicro, SameBitsForAnyIsaThreadCountAndMcNc) {
  olmo::testing::IsaGuard guard;
  const int nt0 = omp_get_max_threads();
  for (int ta = 0; ta < 2; ++ta) {
    Case c = make_case(ta, false, 97, 75, 600, 1, 7);
    std::vector<float> first;
    for (olmo::Isa isa : olmo::testing::isas()) {
      olmo::set_isa_override(isa);
      for (int threads : {1, 2, 3, 5})
        for (GemmMicroBlocking blk : {GemmMicroBlocking{128, 144, 3072},
                                      GemmMicroBlocking{128, 18, 48},
                                      GemmMicroBlocking{128, 60, 16}}) {
          omp_set_num_threads(threads);
          std::vector<float> C = c.C;
          gemm_micro(c.ta, c.tb, c.M, c.N, c.K, 1.0f, c.A.data(), c.B.data(), 1.0f, C.data(),
                     c.lda, c.ldb, c.ldc, blk);
          if (first.empty()) first = C;
          else
            EXPECT_EQ(std::memcmp(C.data(), first.data(), C.size() * sizeof(float)), 0)
                << olmo::isa_name(isa) << " ta=" << ta << " threads=" << threads
                << " mc=" << blk.mc << " nc=" << blk.nc;
        }
    }
  }
  omp_set_num_threads(nt0);
}

// gemm() runs gemm_micro on every shape and ISA (gemm.h): its bits equal gemm_micro's, and
// differ from oneDNN's at K = 600 (several kc blocks of both), so the test would see a call that
// went elsewhere. (gemm_bf16 / gemm_micro_bf16: gemm_bf16_dot_test.cpp.)
TEST(GemmMicro, GemmRunsGemmMicro) {
  olmo::testing::IsaGuard guard;
  for (olmo::Isa isa : olmo::testing::isas()) {
    olmo::set_isa_override(isa);
    for (auto [ta, tb, M, N, K] : {std::tuple{true, false, 96, 32, 600},
                                   {false, true, 61, 45, 600}, {false, false, 40, 32, 600},
                                   {true, true, 33, 70, 600}}) {
      Case c = make_case(ta, tb, M, N, K, 0, 3);
      std::vector<float> g = c.C, micro = c.C, dnn = c.C;
      olmo::kernels::gemm(ta, tb, M, N, K, 1.0f, c.A.data(), c.B.data(), 1.0f, g.data());
      gemm_micro(ta, tb, M, N, K, 1.0f, c.A.data(), c.B.data(), 1.0f, micro.data());
      olmo::kernels::gemm_onednn(ta, tb, M, N, K, 1.0f, c.A.data(), c.B.data(), 1.0f,
                                 dnn.data());
      ASSERT_NE(std::memcmp(micro.data(), dnn.data(), g.size() * sizeof(float)), 0)
          << "the two kernels agree bit for bit here: the routing would be invisible";
      EXPECT_EQ(std::memcmp(g.data(), micro.data(), g.size() * sizeof(float)), 0)
          << olmo::isa_name(isa) << " ta=" << ta << " tb=" << tb << " M=" << M;
    }
  }
}
