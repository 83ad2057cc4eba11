// Elementwise kernels, AVX2 + FMA (masked tails). Intrinsics only: no std::.
#include <immintrin.h>

#include "kernels/vec_kernels.h"

namespace olmo::kernels::isa_avx2 {

static inline __m256i tail_mask(int64_t rem) {
  int r = rem >= 8 ? 8 : int(rem);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(r), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

void add_inplace(float* y, const float* x, int64_t i0, int64_t i1) {
  int64_t i = i0;
  for (; i + 8 <= i1; i += 8)
    _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_loadu_ps(x + i)));
  if (i < i1) {
    __m256i m = tail_mask(i1 - i);
    _mm256_maskstore_ps(y + i, m, _mm256_add_ps(_mm256_maskload_ps(y + i, m),
                                                _mm256_maskload_ps(x + i, m)));
  }
}

void add(float* out, const float* a, const float* b, int64_t i0, int64_t i1) {
  int64_t i = i0;
  for (; i + 8 <= i1; i += 8)
    _mm256_storeu_ps(out + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  if (i < i1) {
    __m256i m = tail_mask(i1 - i);
    _mm256_maskstore_ps(out + i, m, _mm256_add_ps(_mm256_maskload_ps(a + i, m),
                                                  _mm256_maskload_ps(b + i, m)));
  }
}

void axpy(float* y, float a, const float* x, int64_t i0, int64_t i1) {
  __m256 va = _mm256_set1_ps(a);
  int64_t i = i0;
  for (; i + 8 <= i1; i += 8)
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  if (i < i1) {
    __m256i m = tail_mask(i1 - i);
    _mm256_maskstore_ps(y + i, m, _mm256_fmadd_ps(va, _mm256_maskload_ps(x + i, m),
                                                  _mm256_maskload_ps(y + i, m)));
  }
}

void scale_inplace(float* y, float a, int64_t i0, int64_t i1) {
  __m256 va = _mm256_set1_ps(a);
  int64_t i = i0;
  for (; i + 8 <= i1; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(va, _mm256_loadu_ps(y + i)));
  if (i < i1) {
    __m256i m = tail_mask(i1 - i);
    _mm256_maskstore_ps(y + i, m, _mm256_mul_ps(va, _mm256_maskload_ps(y + i, m)));
  }
}

double sum_squares(const float* x, int64_t i0, int64_t i1) {
  __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
  int64_t i = i0;
  for (; i < i1; i += 8) {
    __m256 v = _mm256_maskload_ps(x + i, tail_mask(i1 - i));
    __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
    __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
    a0 = _mm256_fmadd_pd(lo, lo, a0);
    a1 = _mm256_fmadd_pd(hi, hi, a1);
  }
  __m256d s = _mm256_add_pd(a0, a1);
  __m128d h = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
  return _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
}

}  // namespace olmo::kernels::isa_avx2
