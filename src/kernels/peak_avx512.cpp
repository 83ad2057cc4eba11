// fp32 FMA peak loop, AVX-512: 24 independent zmm accumulators (covers 4-cycle latency x 2 FMA
// ports x 3), 768 flops per iteration. Intrinsics only: no std::.
// GCC 12 warns falsely on the _mm*_undefined_* operands inside its own intrinsic headers.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstdint>

namespace olmo::kernels::isa_avx512 {

double fma_loop(int64_t iters, float* sink) {
  // Distinct starting values so the compiler cannot merge identical chains (it did: all 24
  // equal chains were CSE'd into one, tripling the apparent peak).
#define OLMO_I(k) _mm512_set1_ps(1.0f + 0.001f * (k))
  __m512 a0 = OLMO_I(0), a1 = OLMO_I(1), a2 = OLMO_I(2), a3 = OLMO_I(3), a4 = OLMO_I(4),
         a5 = OLMO_I(5), a6 = OLMO_I(6), a7 = OLMO_I(7), a8 = OLMO_I(8), a9 = OLMO_I(9),
         a10 = OLMO_I(10), a11 = OLMO_I(11), a12 = OLMO_I(12), a13 = OLMO_I(13),
         a14 = OLMO_I(14), a15 = OLMO_I(15), a16 = OLMO_I(16), a17 = OLMO_I(17),
         a18 = OLMO_I(18), a19 = OLMO_I(19), a20 = OLMO_I(20), a21 = OLMO_I(21),
         a22 = OLMO_I(22), a23 = OLMO_I(23);
#undef OLMO_I
  const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; ++i) {
#define OLMO_F(a) a = _mm512_fmadd_ps(a, m, c)
    OLMO_F(a0); OLMO_F(a1); OLMO_F(a2); OLMO_F(a3); OLMO_F(a4); OLMO_F(a5);
    OLMO_F(a6); OLMO_F(a7); OLMO_F(a8); OLMO_F(a9); OLMO_F(a10); OLMO_F(a11);
    OLMO_F(a12); OLMO_F(a13); OLMO_F(a14); OLMO_F(a15); OLMO_F(a16); OLMO_F(a17);
    OLMO_F(a18); OLMO_F(a19); OLMO_F(a20); OLMO_F(a21); OLMO_F(a22); OLMO_F(a23);
#undef OLMO_F
    // Opaque to the optimiser: every accumulator is live and unknown after each iteration.
    __asm__ volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5),
                     "+v"(a6), "+v"(a7), "+v"(a8), "+v"(a9), "+v"(a10), "+v"(a11));
    __asm__ volatile("" : "+v"(a12), "+v"(a13), "+v"(a14), "+v"(a15), "+v"(a16), "+v"(a17),
                     "+v"(a18), "+v"(a19), "+v"(a20), "+v"(a21), "+v"(a22), "+v"(a23));
  }
  __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                           _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
  s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)),
                                     _mm512_add_ps(_mm512_add_ps(a12, a13), _mm512_add_ps(a14, a15))));
  s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a16, a17), _mm512_add_ps(a18, a19)),
                                     _mm512_add_ps(_mm512_add_ps(a20, a21), _mm512_add_ps(a22, a23))));
  *sink += _mm512_reduce_add_ps(s);
  return double(iters) * 24 * 16 * 2;
}

}  // namespace olmo::kernels::isa_avx512
