// SwiGLU kernels, AVX2 + FMA. exp() as in swiglu_avx512.cpp (Cody-Waite reduction, Cephes
// polynomial), 2^k built in the exponent field. Intrinsics only: no std::.
#include <immintrin.h>

#include "kernels/vec_kernels.h"

namespace olmo::kernels::isa_avx2 {

static inline __m256 exp_ps(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.33654f)), _mm256_set1_ps(88.37626f));
  __m256 k = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(k, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, r);
  p = _mm256_add_ps(p, _mm256_set1_ps(1.0f));
  // 2^k for k in [-126, 127]: (k + 127) << 23. k = 128 (x near 88.37) is split as 2 * 2^127.
  __m256 k1 = _mm256_min_ps(k, _mm256_set1_ps(127.0f));
  __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k1), _mm256_set1_epi32(127)), 23);
  p = _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
  return _mm256_mul_ps(p, _mm256_add_ps(_mm256_set1_ps(1.0f),
                                        _mm256_and_ps(_mm256_cmp_ps(k, k1, _CMP_GT_OQ),
                                                      _mm256_set1_ps(1.0f))));
}

static inline __m256i tail_mask(int64_t rem) {
  int r = rem >= 8 ? 8 : int(rem);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(r), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

void swiglu_fwd(const float* gate, const float* up, float* out, int64_t i0, int64_t i1) {
  const __m256 one = _mm256_set1_ps(1.0f);
  for (int64_t i = i0; i < i1; i += 8) {
    __m256i m = tail_mask(i1 - i);
    __m256 g = _mm256_maskload_ps(gate + i, m), u = _mm256_maskload_ps(up + i, m);
    __m256 e = exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), g));
    __m256 silu = _mm256_div_ps(g, _mm256_add_ps(one, e));
    _mm256_maskstore_ps(out + i, m, _mm256_mul_ps(silu, u));
  }
}

void swiglu_bwd(const float* gate, const float* up, const float* dout, float* dgate,
                float* dup, int64_t i0, int64_t i1) {
  const __m256 one = _mm256_set1_ps(1.0f);
  for (int64_t i = i0; i < i1; i += 8) {
    __m256i m = tail_mask(i1 - i);
    __m256 g = _mm256_maskload_ps(gate + i, m), u = _mm256_maskload_ps(up + i, m);
    __m256 d = _mm256_maskload_ps(dout + i, m);
    __m256 e = exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), g));
    __m256 s = _mm256_div_ps(one, _mm256_add_ps(one, e));
    _mm256_maskstore_ps(dup + i, m, _mm256_mul_ps(d, _mm256_mul_ps(g, s)));
    __m256 ds = _mm256_mul_ps(s, _mm256_fmadd_ps(g, _mm256_sub_ps(one, s), one));
    _mm256_maskstore_ps(dgate + i, m, _mm256_mul_ps(_mm256_mul_ps(d, u), ds));
  }
}

}  // namespace olmo::kernels::isa_avx2
