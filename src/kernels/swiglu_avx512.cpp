// SwiGLU kernels, AVX-512. exp() by range reduction x = k ln2 + r (|r| <= ln2/2, Cody-Waite
// split of ln2), a degree-6 Cephes polynomial for e^r and vscalefps for 2^k (within ~2 ulp of
// expf; inputs clamped to +-88.37 so sigmoid saturates cleanly). Intrinsics only: no std::.
// GCC 12 warns falsely on the _mm*_undefined_* operands inside its own intrinsic headers.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/vec_kernels.h"

namespace olmo::kernels::isa_avx512 {

static inline __m512 exp_ps(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-88.37626f)), _mm512_set1_ps(88.37626f));
  __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(k, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r);
  p = _mm512_add_ps(p, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, k);
}

static inline __mmask16 tail_mask(int64_t rem) {
  return rem >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << rem) - 1u);
}

void swiglu_fwd(const float* gate, const float* up, float* out, int64_t i0, int64_t i1) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = i0; i < i1; i += 16) {
    __mmask16 m = tail_mask(i1 - i);
    __m512 g = _mm512_maskz_loadu_ps(m, gate + i), u = _mm512_maskz_loadu_ps(m, up + i);
    __m512 e = exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), g));
    __m512 silu = _mm512_div_ps(g, _mm512_add_ps(one, e));
    _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(silu, u));
  }
}

void swiglu_bwd(const float* gate, const float* up, const float* dout, float* dgate,
                float* dup, int64_t i0, int64_t i1) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = i0; i < i1; i += 16) {
    __mmask16 m = tail_mask(i1 - i);
    __m512 g = _mm512_maskz_loadu_ps(m, gate + i), u = _mm512_maskz_loadu_ps(m, up + i);
    __m512 d = _mm512_maskz_loadu_ps(m, dout + i);
    __m512 e = exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), g));
    __m512 s = _mm512_div_ps(one, _mm512_add_ps(one, e));
    _mm512_mask_storeu_ps(dup + i, m, _mm512_mul_ps(d, _mm512_mul_ps(g, s)));
    // s * (1 + g * (1 - s))
    __m512 ds = _mm512_mul_ps(s, _mm512_fmadd_ps(g, _mm512_sub_ps(one, s), one));
    _mm512_mask_storeu_ps(dgate + i, m, _mm512_mul_ps(_mm512_mul_ps(d, u), ds));
  }
}

}  // namespace olmo::kernels::isa_avx512
