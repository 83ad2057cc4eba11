// RoPE rotation of the heads of one token, AVX2 (masked tail when hd/2 % 8 != 0). Separate
// multiplies then add/sub (no FMA), rounding like torch. Intrinsics only: no std::.
#include <immintrin.h>

#include "kernels/vec_kernels.h"

namespace olmo::kernels::isa_avx2 {

void rope_heads(float* x, int64_t heads, int64_t hd, const float* cs, const float* sn,
                float sign) {
  const int64_t half = hd / 2;
  const __m256 vsign = _mm256_set1_ps(sign);
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int64_t h = 0; h < heads; ++h) {
    float* v = x + h * hd;
    for (int64_t j = 0; j < half; j += 8) {
      int64_t rem = half - j;
      __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(rem >= 8 ? 8 : int(rem)), lanes);
      __m256 c = _mm256_maskload_ps(cs + j, m);
      __m256 s = _mm256_mul_ps(vsign, _mm256_maskload_ps(sn + j, m));
      __m256 x1 = _mm256_maskload_ps(v + j, m), x2 = _mm256_maskload_ps(v + j + half, m);
      __m256 y1 = _mm256_sub_ps(_mm256_mul_ps(x1, c), _mm256_mul_ps(x2, s));
      __m256 y2 = _mm256_add_ps(_mm256_mul_ps(x2, c), _mm256_mul_ps(x1, s));
      _mm256_maskstore_ps(v + j, m, y1);
      _mm256_maskstore_ps(v + j + half, m, y2);
    }
  }
}

}  // namespace olmo::kernels::isa_avx2
