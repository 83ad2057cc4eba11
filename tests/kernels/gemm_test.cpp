// gemm (gemm_micro) and gemm_onednn against gemm_ref for every transpose combination, odd sizes,
// alpha/beta and leading dimensions (bf16: gemm_bf16 and gemm_bf16_onednn). oneDNN picks its own
// ISA (OLMO_ISA does not reach it): ctest runs the
// Gemm.* and GemmBf16.* cases again with ONEDNN_MAX_CPU_ISA=AVX2 and =SSE41
// (tests/kernels/gemm_isa.cmake: gemm_bf16's widened path, that of a CPU without AVX-512), and
// Gemm.OneDnnRunsAtTheCappedIsa checks that the cap took effect.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <dnnl.hpp>
#include <random>
#include <vector>

#include "kernels/gemm.h"
#include "kernels/isa_util.h"

using olmo::kernels::gemm;
using olmo::kernels::gemm_ref;

static double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / (den + 1e-30));
}

TEST(Gemm, MatchesReferenceAllTransposes) {
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (auto [M, N, K] : {std::tuple{1, 1, 1}, {7, 13, 5}, {64, 96, 130}, {33, 257, 71}}) {
        int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 2, ldc = N + 5;
        std::vector<float> A((ta ? K : M) * lda), B((tb ? N : K) * ldb), C(M * ldc), C2;
        for (auto& x : A) x = nd(rng);
        for (auto& x : B) x = nd(rng);
        for (auto& x : C) x = nd(rng);
        C2 = C;
        gemm_ref(ta, tb, M, N, K, 0.5f, A.data(), B.data(), 2.0f, C2.data(), lda, ldb, ldc);
        for (auto* f : {&gemm, &olmo::kernels::gemm_onednn}) {
          std::vector<float> Cf = C;
          f(ta, tb, M, N, K, 0.5f, A.data(), B.data(), 2.0f, Cf.data(), lda, ldb, ldc);
          EXPECT_LT(rel_l2(Cf, C2), 1e-6) << "ta=" << ta << " tb=" << tb << " M=" << M
                                          << (f == &gemm ? " gemm" : " gemm_onednn");
        }
      }
}

// With ONEDNN_MAX_CPU_ISA=AVX2 / SSE41 in the environment, oneDNN's effective ISA is that one (so
// the MatchesReference cases above ran on its AVX2 / SSE4.1 kernels); without it, prints it.
TEST(Gemm, OneDnnRunsAtTheCappedIsa) {
  const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
  const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  std::printf("oneDNN effective ISA: %d (ONEDNN_MAX_CPU_ISA=%s)\n", int(isa), cap ? cap : "unset");
  if (!cap) return;
  const std::string c = cap;
  if (c == "AVX2") EXPECT_EQ(isa, dnnl::cpu_isa::avx2);
  else if (c == "SSE41") EXPECT_EQ(isa, dnnl::cpu_isa::sse41);
  else ADD_FAILURE() << "unexpected ONEDNN_MAX_CPU_ISA=" << c;
}

TEST(Gemm, BetaZeroIgnoresGarbage) {
  std::vector<float> A(6, 1.0f), B(6, 2.0f), C(4, NAN);
  gemm(false, false, 2, 2, 3, 1.0f, A.data(), B.data(), 0.0f, C.data());
  for (float c : C) EXPECT_FLOAT_EQ(c, 6.0f);
}

// gemm_bf16: bf16 inputs, fp32 accumulation. Against gemm_bf16_ref (the same bf16 inputs,
// double accumulation) the only difference is fp32 summation order: rel. L2 <= 1e-6 as for fp32.
// Against fp32 gemm on the unrounded inputs the error is the input rounding (<= 2^-9 relative
// per factor), ~2^-9 rel. L2 for random data.
TEST(GemmBf16, MatchesReferenceAllTransposes) {
  using olmo::kernels::bf16_t;
  std::mt19937 rng(2);
  std::normal_distribution<float> nd;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (auto [M, N, K] : {std::tuple{1, 1, 1}, {7, 13, 5}, {64, 96, 130}, {33, 257, 71}}) {
        int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 2, ldc = N + 5;
        std::vector<float> A((ta ? K : M) * lda), B((tb ? N : K) * ldb), C(M * ldc), C2, C3;
        for (auto& x : A) x = nd(rng);
        for (auto& x : B) x = nd(rng);
        for (auto& x : C) x = nd(rng);
        std::vector<bf16_t> Ab(A.size()), Bb(B.size());
        olmo::kernels::f32_to_bf16(A.data(), Ab.data(), int64_t(A.size()));
        olmo::kernels::f32_to_bf16(B.data(), Bb.data(), int64_t(B.size()));
        C2 = C3 = C;
        olmo::kernels::gemm_bf16_ref(ta, tb, M, N, K, 0.5f, Ab.data(), Bb.data(), 1.0f,
                                     C2.data(), lda, ldb, ldc);
        gemm_ref(ta, tb, M, N, K, 0.5f, A.data(), B.data(), 1.0f, C3.data(), lda, ldb, ldc);
        for (auto* f : {&olmo::kernels::gemm_bf16, &olmo::kernels::gemm_bf16_onednn}) {
          std::vector<float> Cf = C;
          f(ta, tb, M, N, K, 0.5f, Ab.data(), Bb.data(), 1.0f, Cf.data(), lda, ldb, ldc);
          const char* nm = f == &olmo::kernels::gemm_bf16 ? " gemm_bf16" : " gemm_bf16_onednn";
          EXPECT_LT(rel_l2(Cf, C2), 1e-6) << "ta=" << ta << " tb=" << tb << " M=" << M << nm;
          if (K >= 64) {  // the rounding of the inputs is visible, and bounded
            EXPECT_GT(rel_l2(Cf, C3), 1e-5) << nm;
            EXPECT_LT(rel_l2(Cf, C3), 4e-3) << nm;
          }
        }
      }
}

TEST(GemmBf16, BetaZeroIgnoresGarbageAndBetaOneAccumulates) {
  using olmo::kernels::bf16_t;
  std::vector<bf16_t> A(6, olmo::kernels::f32_to_bf16_ref(1.0f)),
      B(6, olmo::kernels::f32_to_bf16_ref(2.0f));
  std::vector<float> C(4, NAN);
  olmo::kernels::gemm_bf16(false, false, 2, 2, 3, 1.0f, A.data(), B.data(), 0.0f, C.data());
  for (float c : C) EXPECT_FLOAT_EQ(c, 6.0f);
  olmo::kernels::gemm_bf16(false, false, 2, 2, 3, 1.0f, A.data(), B.data(), 1.0f, C.data());
  for (float c : C) EXPECT_FLOAT_EQ(c, 12.0f);  // fp32 accumulation into C
}

// Which gemm_bf16_onednn path ran the GemmBf16 cases: oneDNN's bf16 matmul, or (no bf16 matmul in
// oneDNN for this CPU: AVX-512 needed) the fp32 one on widened inputs. The capped runs
// (gemm_isa.cmake) take the widened path on every CPU; the uncapped run announces oneDNN's bf16
// matmul as not run where the CPU has no AVX-512.
TEST(GemmBf16, ProbeMeasuresBothPrecisions) {
  auto p = olmo::kernels::probe_gemm_precisions(128, 128, 128, 1);
  EXPECT_GT(p.fp32_gflops, 0);
  EXPECT_GT(p.bf16_gflops, 0);
  EXPECT_FALSE(p.fp32_impl.empty());
  EXPECT_FALSE(p.bf16_impl.empty());
  const std::string dnn = olmo::kernels::gemm_impl(true, false, true, 128, 128, 128);
  std::printf("gemm_bf16: %s; gemm_bf16_onednn: %s\n", p.bf16_impl.c_str(), dnn.c_str());
  const bool widened = dnn.rfind("fp32 on widened bf16", 0) == 0;
  const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
  if (cap) {
    EXPECT_TRUE(widened) << "ONEDNN_MAX_CPU_ISA=" << cap << ": " << dnn;
  } else if (widened) {
    olmo::testing::not_run("oneDNN's bf16 matmul (gemm_bf16_onednn ran fp32 on widened inputs)",
                           "this CPU lacks AVX-512");
  }
}
