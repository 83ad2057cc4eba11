// Internal: a tiny SIMD vocabulary for the softmax-type kernels (attention tiles, LM-head rows),
// one per ISA, chosen by the compiler flags of the including translation unit:
//   __AVX512F__ -> 16 lanes (zmm), __AVX2__ && __FMA__ -> 8 lanes (ymm), else 1 lane (plain float).
// Everything sits in an anonymous namespace (internal linkage), so the per-ISA copies compiled
// into *_avx512.cpp / *_avx2.cpp can never be merged by the linker with baseline code.
// exp2(x): 2^x for x <= 0 (the only use: arguments are s - max), relative error ~2e-7;
// returns exactly 0 for x < -126 (including -inf), so masked entries vanish.
#pragma once
#include <math.h>

#if defined(__AVX512F__) || defined(__AVX2__)
// GCC 12 warns falsely about _mm512_undefined_ps() inside its own intrinsics headers.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#endif

namespace {

#if defined(__AVX512F__)
struct Vec {
  using R = __m512;
  static constexpr int W = 16;
  static R zero() { return _mm512_setzero_ps(); }
  static R set1(float a) { return _mm512_set1_ps(a); }
  static R load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, R a) { _mm512_storeu_ps(p, a); }
  static R fmadd(R a, R b, R c) { return _mm512_fmadd_ps(a, b, c); }
  static R mul(R a, R b) { return _mm512_mul_ps(a, b); }
  static R add(R a, R b) { return _mm512_add_ps(a, b); }
  static R sub(R a, R b) { return _mm512_sub_ps(a, b); }
  static R max(R a, R b) { return _mm512_max_ps(a, b); }
  static float hsum(R a) { return _mm512_reduce_add_ps(a); }
  static float hmax(R a) { return _mm512_reduce_max_ps(a); }
  static R exp2(R x) {
    const __mmask16 under = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-126.0f), _CMP_LT_OQ);
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-126.0f)), _mm512_set1_ps(126.0f));
    const R n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const R f = _mm512_sub_ps(x, n);  // [-0.5, 0.5]
    R p = _mm512_set1_ps(1.5252733804059840e-05f);
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.5403530393381606e-04f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.3333558146428443e-03f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.6181291076284772e-03f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.5504108664821580e-02f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4022650695910071e-01f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.9314718055994531e-01f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
    return _mm512_maskz_mov_ps(static_cast<__mmask16>(~under), _mm512_scalef_ps(p, n));
  }
};
#elif defined(__AVX2__) && defined(__FMA__)
struct Vec {
  using R = __m256;
  static constexpr int W = 8;
  static R zero() { return _mm256_setzero_ps(); }
  static R set1(float a) { return _mm256_set1_ps(a); }
  static R load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, R a) { _mm256_storeu_ps(p, a); }
  static R fmadd(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }
  static R mul(R a, R b) { return _mm256_mul_ps(a, b); }
  static R add(R a, R b) { return _mm256_add_ps(a, b); }
  static R sub(R a, R b) { return _mm256_sub_ps(a, b); }
  static R max(R a, R b) { return _mm256_max_ps(a, b); }
  static float hsum(R a) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
  }
  static float hmax(R a) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
  }
  static R exp2(R x) {
    const R under = _mm256_cmp_ps(x, _mm256_set1_ps(-126.0f), _CMP_LT_OQ);
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-126.0f)), _mm256_set1_ps(126.0f));
    const R n = _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const R f = _mm256_sub_ps(x, n);
    R p = _mm256_set1_ps(1.5252733804059840e-05f);
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.5403530393381606e-04f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.3333558146428443e-03f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(9.6181291076284772e-03f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(5.5504108664821580e-02f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(2.4022650695910071e-01f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(6.9314718055994531e-01f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f));
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n),
                                                         _mm256_set1_epi32(127)), 23);
    return _mm256_andnot_ps(under, _mm256_mul_ps(p, _mm256_castsi256_ps(e)));
  }
};
#else
struct Vec {
  using R = float;
  static constexpr int W = 1;
  static R zero() { return 0.0f; }
  static R set1(float a) { return a; }
  static R load(const float* p) { return *p; }
  static void store(float* p, R a) { *p = a; }
  static R fmadd(R a, R b, R c) { return a * b + c; }
  static R mul(R a, R b) { return a * b; }
  static R add(R a, R b) { return a + b; }
  static R sub(R a, R b) { return a - b; }
  static R max(R a, R b) { return a > b ? a : b; }
  static float hsum(R a) { return a; }
  static float hmax(R a) { return a; }
  static R exp2(R x) { return x < -126.0f ? 0.0f : exp2f(x > 126.0f ? 126.0f : x); }
};
#endif

}  // namespace
