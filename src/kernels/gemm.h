// Single-precision GEMM for every linear layer, through oneDNN's matmul primitive (fp32, the
// brgemm AVX-512 kernels; cached per shape), plus a slow reference for tests.
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
#pragma once
#include <cstdint>

namespace olmo::kernels {

void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
          const float* B, float beta, float* C, int64_t lda = 0, int64_t ldb = 0,
          int64_t ldc = 0);

// Reference: triple loop with double accumulation. Same contract as gemm().
void gemm_ref(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
              const float* B, float beta, float* C, int64_t lda = 0, int64_t ldb = 0,
              int64_t ldc = 0);

}  // namespace olmo::kernels
