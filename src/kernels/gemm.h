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
//   active_isa() == avx2  &&  ta && !tb  &&  M >= 16384
// i.e. on AVX2 parts the weight gradient dW += dy^T x of a matrix with >= 16384 rows (the LM
// head: 100352 x 768 x chunk rows). Measured on Zen 2, 1 thread, alternated best-of-3 CPU time
// (bench/results/gemm_shapes.md, "Zen 2 (AVX2)"): 100352x768x416 88.0% of the fp32 peak vs
// oneDNN gemm:jit's 80.6% (x1.09; 160 rows x1.13, 1024 rows x1.06). Every other step shape
// stays on oneDNN: gemm_micro ties or loses there (-6% .. +2%), except the MLP's 3072-row dW at a
// steady +4..5%, under the 5% bar. AVX-512 and the scalar level: always oneDNN (not measured).
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
