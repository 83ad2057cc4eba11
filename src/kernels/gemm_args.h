// Argument handling shared by gemm() (gemm.cpp) and gemm_micro() (gemm_micro.cpp), whose
// contract is gemm.h's: ld* = 0 means the tight row width of the stored matrix, and the empty
// cases are finished here. Cost: O(M*N) only when K == 0.
#pragma once
#include <cstdint>

namespace olmo::kernels {

// Fills lda / ldb / ldc that are 0 with the tight widths. Returns true when nothing is left to
// compute: M or N is 0 (C untouched), or K is 0 (C = beta * C; beta == 0 writes zeros without
// reading C, so NaN in C does not survive).
inline bool gemm_args_done(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float beta,
                           float* C, int64_t& lda, int64_t& ldb, int64_t& ldc) {
  if (M == 0 || N == 0) return true;
  if (!lda) lda = ta ? M : K;
  if (!ldb) ldb = tb ? K : N;
  if (!ldc) ldc = N;
  if (K != 0) return false;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
  return true;
}

}  // namespace olmo::kernels
