// Elementwise kernels, AVX-512 (masked tails). Intrinsics only: no std::.
// GCC 12 warns falsely on the _mm*_undefined_* operands inside its own intrinsic headers.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/vec_kernels.h"

namespace olmo::kernels::isa_avx512 {

static inline __mmask16 tail_mask(int64_t rem) {
  return rem >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << rem) - 1u);
}

void add_inplace(float* y, const float* x, int64_t i0, int64_t i1) {
  int64_t i = i0;
  for (; i + 32 <= i1; i += 32) {
    _mm512_storeu_ps(y + i, _mm512_add_ps(_mm512_loadu_ps(y + i), _mm512_loadu_ps(x + i)));
    _mm512_storeu_ps(y + i + 16,
                     _mm512_add_ps(_mm512_loadu_ps(y + i + 16), _mm512_loadu_ps(x + i + 16)));
  }
  for (; i < i1; i += 16) {
    __mmask16 m = tail_mask(i1 - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, y + i),
                                                  _mm512_maskz_loadu_ps(m, x + i)));
  }
}

void add(float* out, const float* a, const float* b, int64_t i0, int64_t i1) {
  for (int64_t i = i0; i < i1; i += 16) {
    __mmask16 m = tail_mask(i1 - i);
    _mm512_mask_storeu_ps(out + i, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, a + i),
                                                    _mm512_maskz_loadu_ps(m, b + i)));
  }
}

void axpy(float* y, float a, const float* x, int64_t i0, int64_t i1) {
  __m512 va = _mm512_set1_ps(a);
  for (int64_t i = i0; i < i1; i += 16) {
    __mmask16 m = tail_mask(i1 - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(va, _mm512_maskz_loadu_ps(m, x + i),
                                                    _mm512_maskz_loadu_ps(m, y + i)));
  }
}

void scale_inplace(float* y, float a, int64_t i0, int64_t i1) {
  __m512 va = _mm512_set1_ps(a);
  for (int64_t i = i0; i < i1; i += 16) {
    __mmask16 m = tail_mask(i1 - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(va, _mm512_maskz_loadu_ps(m, y + i)));
  }
}

double sum_squares(const float* x, int64_t i0, int64_t i1) {
  __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd();
  for (int64_t i = i0; i < i1; i += 16) {
    __m512 v = _mm512_maskz_loadu_ps(tail_mask(i1 - i), x + i);
    __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    a0 = _mm512_fmadd_pd(lo, lo, a0);
    a1 = _mm512_fmadd_pd(hi, hi, a1);
  }
  return _mm512_reduce_add_pd(_mm512_add_pd(a0, a1));
}

}  // namespace olmo::kernels::isa_avx512
