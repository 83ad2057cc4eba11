// GEMM for every linear layer. fp32: our own gemm_micro (gemm_micro.h) for every call, so the
// bits of every fp32 training GEMM depend only on its inputs and the constant kc -- never on the
// ISA (scalar / AVX2 / AVX-512), the thread count or the detected cache sizes
// (docs/invariance.md); oneDNN's fp32 matmul is kept only as gemm_onednn, which no bit of a
// training run depends on (benchmarks and tests compare against it). bf16: gemm_micro_bf16
// for every call (VDPBF16PS's arithmetic, native where the CPU has AVX512_BF16, emulated bit for
// bit elsewhere: the same bits on every ISA); oneDNN's bf16 matmul only as gemm_bf16_onednn.
// Plus slow references for tests. Two input precisions:
//   gemm       fp32 x fp32 -> fp32
//   gemm_bf16  bf16 x bf16 -> fp32 (products exact in fp32, fp32 accumulation, denormal bf16
//              inputs and fp32 partial sums flushed to zero; beta = 1 adds into an fp32 C: how
//              bf16_mixed accumulates weight gradients)
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

// Same contract with bf16 A and B (bf16.h): gemm_micro_bf16 (gemm_micro.h), whose bits depend
// on its inputs only.
void gemm_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const bf16_t* A,
               const bf16_t* B, float beta, float* C, int64_t lda = 0, int64_t ldb = 0,
               int64_t ldc = 0);

// The same contracts through oneDNN's matmul (primitives cached per shape; where oneDNN has no
// bf16 matmul for this CPU, A and B are widened to fp32 and its fp32 matmul runs). Its
// summation order depends on the ISA oneDNN picks and on the detected cache sizes: for
// benchmarks and tests only, never on the training path.
void gemm_onednn(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                 const float* B, float beta, float* C, int64_t lda = 0, int64_t ldb = 0,
                 int64_t ldc = 0);
void gemm_bf16_onednn(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                      const bf16_t* A, const bf16_t* B, float beta, float* C, int64_t lda = 0,
                      int64_t ldb = 0, int64_t ldc = 0);

// References: triple loop with double accumulation. Same contracts.
void gemm_ref(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
              const float* B, float beta, float* C, int64_t lda = 0, int64_t ldb = 0,
              int64_t ldc = 0);
void gemm_bf16_ref(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                   const bf16_t* A, const bf16_t* B, float beta, float* C, int64_t lda = 0,
                   int64_t ldb = 0, int64_t ldc = 0);

// oneDNN's implementation name for a tight-layout shape ("brg:avx512_core_bf16", ...).
std::string gemm_impl(bool bf16, bool ta, bool tb, int64_t M, int64_t N, int64_t K);

// Start-up probe for `precision: auto`: best-of-`reps` GFLOP/s of gemm() and gemm_bf16()
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
