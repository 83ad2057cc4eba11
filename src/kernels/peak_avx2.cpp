// fp32 FMA peak loop, AVX2 + FMA: 12 independent ymm accumulators (16 ymm registers available),
// 192 flops per iteration. Intrinsics only: no std::.
#include <immintrin.h>

#include <cstdint>

namespace olmo::kernels::isa_avx2 {

double fma_loop(int64_t iters, float* sink) {
  // Distinct starting values so identical chains cannot be merged by the compiler.
#define OLMO_I(k) _mm256_set1_ps(1.0f + 0.001f * (k))
  __m256 a0 = OLMO_I(0), a1 = OLMO_I(1), a2 = OLMO_I(2), a3 = OLMO_I(3), a4 = OLMO_I(4),
         a5 = OLMO_I(5), a6 = OLMO_I(6), a7 = OLMO_I(7), a8 = OLMO_I(8), a9 = OLMO_I(9),
         a10 = OLMO_I(10), a11 = OLMO_I(11);
#undef OLMO_I
  const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; ++i) {
#define OLMO_F(a) a = _mm256_fmadd_ps(a, m, c)
    OLMO_F(a0); OLMO_F(a1); OLMO_F(a2); OLMO_F(a3); OLMO_F(a4); OLMO_F(a5);
    OLMO_F(a6); OLMO_F(a7); OLMO_F(a8); OLMO_F(a9); OLMO_F(a10); OLMO_F(a11);
#undef OLMO_F
    __asm__ volatile("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5),
                     "+x"(a6), "+x"(a7), "+x"(a8), "+x"(a9), "+x"(a10), "+x"(a11));
  }
  __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                           _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
  s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  h = _mm_add_ss(h, _mm_movehdup_ps(h));
  *sink += _mm_cvtss_f32(h);
  return double(iters) * 12 * 8 * 2;
}

}  // namespace olmo::kernels::isa_avx2
