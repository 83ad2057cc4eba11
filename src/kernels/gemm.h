// GEMM for every linear layer, through oneDNN's matmul primitive (the brgemm AVX-512 kernels;
// primitives cached per shape) or, for the shapes of gemm_routes_to_micro below, our own
// gemm_micro (gemm_micro.h), plus slow references for tests. Two input precisions:
//   gemm       fp32 x fp32 -> fp32
//   gemm_bf16  bf16 x bf16 -> fp32 (products exact in fp32, fp32 accumulation; beta = 1 adds
//              into an fp32 C: how bf16_mixed accumulates weight gradients)
//
//   C[M,N] = alpha * op(A) @ op(B) + beta * C        (row-major)
//   op(A) is [M,K]: A stored [M,K] (ta=false, lda >= K) or [K,M] (ta=true, lda >= M)
//   op(B) is [K,N]: B stored [K,N] (tb=false, ldb >= N) or [N,K] (tb=true, ldb >= K)
//   ldc >= N. ld* = 0 means "tight" (the row width of the stored matrix).
//
// Linear layer y = x W^T with W [out,in]:  gemm(false, true,  N, out, in, 1, x, W, 0, y)
//   backward data  dx = dy W:               gemm(false, false, N, in, out, 1, dy, W, 0, dx)
//   backward weight dW += dy^T x:           gemm(true,  false, out, in, N, 1, dy, x, 1, dW)
// Cost: 2*M*N*K flops. Threads: OpenMP (all threads of the current team size).
// Profiler rows (core/profile.h): "gemm MxNxK" and "gemm_bf16 MxNxK".
#pragma once
#include <cstdint>
#include <string>

#include "kernels/bf16.h"

namespace olmo::kernels {

void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
          const float* B, float beta, float* C, int64_t lda = 0, int64_t ldb = 0,
          int64_t ldc = 0);

// Same contract with bf16 A and B (bf16.h). Runs on any CPU: where oneDNN has no bf16 matmul
// (AVX2-only parts) A and B are widened to fp32 (exact) and the fp32 matmul runs, with the same
// products and fp32 accumulation, slower than gemm(). The model picks the bf16 path only where
// cpu_has_bf16() (or OLMO_BF16=emulate, bf16.h).
void gemm_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const bf16_t* A,
               const bf16_t* B, float beta, float* C, int64_t lda = 0, int64_t ldb = 0,
               int64_t ldc = 0);

// gemm() always through oneDNN, never gemm_micro (benchmarks and tests compare the two).
void gemm_onednn(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                 const float* B, float beta, float* C, int64_t lda = 0, int64_t ldb = 0,
                 int64_t ldc = 0);

// Whether gemm() sends this fp32 call to gemm_micro (gemm_micro.h) instead of oneDNN. A static
// rule on the active ISA and the shape class (no timing), so every rank of a distributed run
// picks the same kernel:
//   active_isa() == avx2  &&  ta && !tb  &&  M >= 3072  &&  N <= 1024
// i.e. on AVX2 parts a weight gradient dW += dy^T x with many rows and few columns: in
// olmo3-190m the MLP's gate / up dW (3072 x 768) and the LM head's (100352 x 768). Measured on
// Zen 2, 1 thread, alternated best-of-3 CPU time (bench/results/gemm_shapes.md, "Zen 2 (AVX2)"),
// gemm_micro vs oneDNN's gemm:jit: 3072x768x2048 x1.07, 6144x768x2048 x1.08, 100352x768x416
// x1.12 (160 / 1024 rows: x1.15 / x1.09); through gemm() the 190m MLP dW went from 84.6% to
// 91.2% of the fp32 peak, the LM-head dW from 80.7% to 90.2%. Outside the rule gemm_micro ties
// or loses: 2304x768x2048 x1.00, 768x3072x2048 x0.95-x0.99, 768x768x2048 x0.99, the 7B dW
// 4096x4096 / 11008x4096 / 4096x11008 x0.99-x1.01, the 7B LM head 100352x4096x416 x1.03 (under
// the 5% bar), every forward / backward-data shape x0.94-x1.02. N between 768 and 4096 is not
// measured. AVX-512 and the scalar level: always oneDNN (not measured against it there).
bool gemm_routes_to_micro(bool ta, bool tb, int64_t M, int64_t N, int64_t K);

// References: triple loop with double accumulation. Same contracts.
void gemm_ref(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
              const float* B, float beta, float* C, int64_t lda = 0, int64_t ldb = 0,
              int64_t ldc = 0);
void gemm_bf16_ref(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                   const bf16_t* A, const bf16_t* B, float beta, float* C, int64_t lda = 0,
                   int64_t ldb = 0, int64_t ldc = 0);

// oneDNN's implementation name for a tight-layout shape ("brg:avx512_core_bf16", ...).
std::string gemm_impl(bool bf16, bool ta, bool tb, int64_t M, int64_t N, int64_t K);

// Start-up probe for `precision: auto`: best-of-`reps` GFLOP/s of the fp32 and the bf16 GEMM
// at one forward shape Y[M,N] = X[M,K] W[N,K]^T (default: 2048 tokens, d_model 768 -> 2048,
// an olmo3-190m MLP projection), after one untimed call each. ~0.1 s on 2 cores.
struct GemmProbe {
  int64_t M = 0, N = 0, K = 0;
  double fp32_gflops = 0, bf16_gflops = 0;
  std::string fp32_impl, bf16_impl;
};
GemmProbe probe_gemm_precisions(int64_t M = 2048, int64_t N = 2048, int64_t K = 768,
                                int reps = 3);

}  // namespace olmo::kernels
