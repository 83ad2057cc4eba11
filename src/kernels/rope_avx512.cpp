// RoPE rotation of the heads of one token, AVX-512 (masked tail when hd/2 % 16 != 0).
// Separate multiplies then add/sub (no FMA), so results round exactly like torch's
// q*cos + rotate_half(q)*sin. Intrinsics only: no std::.
// GCC 12 warns falsely on the _mm*_undefined_* operands inside its own intrinsic headers.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/vec_kernels.h"

namespace olmo::kernels::isa_avx512 {

void rope_heads(float* x, int64_t heads, int64_t hd, const float* cs, const float* sn,
                float sign) {
  const int64_t half = hd / 2;
  const __m512 vsign = _mm512_set1_ps(sign);
  for (int64_t h = 0; h < heads; ++h) {
    float* v = x + h * hd;
    for (int64_t j = 0; j < half; j += 16) {
      int64_t rem = half - j;
      __mmask16 m = rem >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << rem) - 1u);
      __m512 c = _mm512_maskz_loadu_ps(m, cs + j);
      __m512 s = _mm512_mul_ps(vsign, _mm512_maskz_loadu_ps(m, sn + j));
      __m512 x1 = _mm512_maskz_loadu_ps(m, v + j), x2 = _mm512_maskz_loadu_ps(m, v + j + half);
      __m512 y1 = _mm512_sub_ps(_mm512_mul_ps(x1, c), _mm512_mul_ps(x2, s));
      __m512 y2 = _mm512_add_ps(_mm512_mul_ps(x2, c), _mm512_mul_ps(x1, s));
      _mm512_mask_storeu_ps(v + j, m, y1);
      _mm512_mask_storeu_ps(v + j + half, m, y2);
    }
  }
}

}  // namespace olmo::kernels::isa_avx512
