// The one SIMD wrapper every vectorised kernel body is written over (*_body.h), and the stamp
// that puts each body into one namespace per ISA.
//
// Lanes come from the compiler flags of the including translation unit:
//   __AVX512F__            -> Vec: 16 floats (zmm),  OLMO_ISA_NS isa_avx512, 64-byte int vectors
//   __AVX2__ && __FMA__    -> Vec:  8 floats (ymm),  OLMO_ISA_NS isa_avx2,   32-byte int vectors
//   otherwise (baseline)   -> Vec:  1 float (plain), OLMO_ISA_NS isa_scalar, 16-byte int vectors
// A body is compiled three times: once in its public .cpp (baseline flags: the isa_scalar copy)
// and once in each of stamp_avx2.cpp / stamp_avx512.cpp (CMake gives files ending _avx2.cpp /
// _avx512.cpp those flags, and -ffp-contract=off). Everything a body defines lives in namespace
// OLMO_ISA_NS (so the copies have different mangled names) and Vec has internal linkage: the
// linker can never merge an AVX-512 copy into baseline code. Bodies therefore use only
// <math.h>/<stdint.h>/<string.h> functions and builtins, never std:: templates or inline
// functions of other headers. The public .cpp picks a copy at run time with OLMO_DISPATCH
// (kernels/dispatch.h).
//
// Same bits on every ISA (docs/invariance.md): every Vec operation is one IEEE operation per
// lane with one rounding, identical in the three copies -- fmadd / fmsub / fnmadd are fused on
// every ISA (the scalar copy calls fmaf, correctly rounded wherever it runs), the compiler never
// contracts a*b+c on its own (-ffp-contract=off; the baseline has no FMA instruction), and the
// transcendental functions below are written once over Vec (no libm). A body's result is
// therefore independent of the ISA as long as every output element sees the same sequence of
// operations: lane-wise code is, and reductions across lanes go through V16 (16 virtual lanes,
// fixed tree) instead of Vec::W-dependent accumulators.
//
// Vec: zero, set1, load/store (unaligned), load_n/store_n (first n lanes, n >= 1; the rest
// read as 0 and not written), add, sub, mul, div, fmadd (a*b+c, one rounding), fmsub (a*b-c),
// fnmadd (c-a*b), min, max, round (to nearest even), ldexp(p, k) (p * 2^k, k integral in
// [-126, 128]), ldexp127(p, k) (the same for k in [-126, 127]; fewer ops on AVX2),
// lt_zero(x, lim, v) (v, 0 where x < lim), hmax (any order: max is exact), opaque(r) (the
// optimiser must assume r changed: keeps register loops honest); AVX2 only: transpose8 (an
// 8 x 8 block). Lane-count-dependent horizontal sums (peak_body.h only) use hsum_w.
// After the structs: V16 and exp(x) (Cephes, within ~2 ulp of expf), exp2(x) (for x <= 0,
// relative error ~2e-7, exactly 0 below -126) and log2(x) (scalar, x > 0), written once for
// every ISA.
#pragma once
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__AVX512F__) || defined(__AVX2__)
// GCC 12 warns falsely about _mm512_undefined_ps() inside its own intrinsics headers.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#endif

// Stamp the same declarations into the three ISA namespaces (used by the body headers, inside
// their library's namespace): OLMO_FOR_EACH_ISA(DECLS_MACRO).
#define OLMO_FOR_EACH_ISA(decls)   \
  namespace isa_scalar { decls }   \
  namespace isa_avx2 { decls }     \
  namespace isa_avx512 { decls }

#if defined(__AVX512F__)
#define OLMO_ISA_NS isa_avx512
#define OLMO_SIMD_BYTES 64
#elif defined(__AVX2__) && defined(__FMA__)
#define OLMO_ISA_NS isa_avx2
#define OLMO_SIMD_BYTES 32
#else
#define OLMO_ISA_NS isa_scalar
#define OLMO_SIMD_BYTES 16
#endif

namespace {

#if defined(__AVX512F__)
struct Vec {
  using R = __m512;
  static constexpr int W = 16;
  static __mmask16 mask(int64_t n) { return n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1u); }
  static R zero() { return _mm512_setzero_ps(); }
  static R set1(float a) { return _mm512_set1_ps(a); }
  static R load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, R a) { _mm512_storeu_ps(p, a); }
  static R load_n(const float* p, int64_t n) { return _mm512_maskz_loadu_ps(mask(n), p); }
  static void store_n(float* p, R a, int64_t n) { _mm512_mask_storeu_ps(p, mask(n), a); }
  static R add(R a, R b) { return _mm512_add_ps(a, b); }
  static R sub(R a, R b) { return _mm512_sub_ps(a, b); }
  static R mul(R a, R b) { return _mm512_mul_ps(a, b); }
  static R div(R a, R b) { return _mm512_div_ps(a, b); }
  static R fmadd(R a, R b, R c) { return _mm512_fmadd_ps(a, b, c); }
  static R fmsub(R a, R b, R c) { return _mm512_fmsub_ps(a, b, c); }
  static R fnmadd(R a, R b, R c) { return _mm512_fnmadd_ps(a, b, c); }
  static R min(R a, R b) { return _mm512_min_ps(a, b); }
  static R max(R a, R b) { return _mm512_max_ps(a, b); }
  static R round(R a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static R ldexp(R p, R k) { return _mm512_scalef_ps(p, k); }
  static R ldexp127(R p, R k) { return _mm512_scalef_ps(p, k); }
  static R lt_zero(R x, R lim, R v) {
    return _mm512_maskz_mov_ps(static_cast<__mmask16>(~_mm512_cmp_ps_mask(x, lim, _CMP_LT_OQ)), v);
  }
  // Zero (sign kept) where the exponent field is 0: flush-to-zero of a denormal, as VDPBF16PS
  // flushes its results (kernels/gemm_micro.h gemm_micro_bf16's emulation).
  static R ftz(R a) {
    const __mmask16 d = _mm512_cmp_ps_mask(_mm512_abs_ps(a), set1(0x1p-126f), _CMP_LT_OQ);
    return _mm512_mask_and_ps(a, d, a, set1(-0.0f));
  }
  static float hsum_w(R a) { return _mm512_reduce_add_ps(a); }
  static float hmax(R a) { return _mm512_reduce_max_ps(a); }
  static void opaque(R& a) { __asm__ volatile("" : "+v"(a)); }
};
#elif defined(__AVX2__) && defined(__FMA__)
struct Vec {
  using R = __m256;
  static constexpr int W = 8;
  static __m256i mask(int64_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n >= 8 ? 8 : int(n)),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static R zero() { return _mm256_setzero_ps(); }
  static R set1(float a) { return _mm256_set1_ps(a); }
  static R load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, R a) { _mm256_storeu_ps(p, a); }
  static R load_n(const float* p, int64_t n) { return _mm256_maskload_ps(p, mask(n)); }
  static void store_n(float* p, R a, int64_t n) { _mm256_maskstore_ps(p, mask(n), a); }
  static R add(R a, R b) { return _mm256_add_ps(a, b); }
  static R sub(R a, R b) { return _mm256_sub_ps(a, b); }
  static R mul(R a, R b) { return _mm256_mul_ps(a, b); }
  static R div(R a, R b) { return _mm256_div_ps(a, b); }
  static R fmadd(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }
  static R fmsub(R a, R b, R c) { return _mm256_fmsub_ps(a, b, c); }
  static R fnmadd(R a, R b, R c) { return _mm256_fnmadd_ps(a, b, c); }
  static R min(R a, R b) { return _mm256_min_ps(a, b); }
  static R max(R a, R b) { return _mm256_max_ps(a, b); }
  static R round(R a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // 2^k built in the exponent field for k <= 127; k = 128 as 2^127 * 2 (exact either way).
  static R ldexp(R p, R k) {
    const R k1 = _mm256_min_ps(k, _mm256_set1_ps(127.0f));
    const __m256i e = _mm256_slli_epi32(
        _mm256_add_epi32(_mm256_cvtps_epi32(k1), _mm256_set1_epi32(127)), 23);
    p = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
    return _mm256_mul_ps(p, _mm256_add_ps(_mm256_set1_ps(1.0f),
                                          _mm256_and_ps(_mm256_cmp_ps(k, k1, _CMP_GT_OQ),
                                                        _mm256_set1_ps(1.0f))));
  }
  // k in [-126, 127] only: 2^k straight from the exponent field (ldexp's result, fewer ops).
  static R ldexp127(R p, R k) {
    const __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127));
    return _mm256_mul_ps(p, _mm256_castsi256_ps(_mm256_slli_epi32(e, 23)));
  }
  static R lt_zero(R x, R lim, R v) { return _mm256_andnot_ps(_mm256_cmp_ps(x, lim, _CMP_LT_OQ), v); }
  static R ftz(R a) {
    const R mag = _mm256_andnot_ps(set1(-0.0f), a);
    return _mm256_andnot_ps(_mm256_and_ps(_mm256_cmp_ps(mag, set1(0x1p-126f), _CMP_LT_OQ), mag), a);
  }
  static float hsum_w(R a) {
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
  // AVX2 only: dst[j * ldd + i] = src[i * lds + j] for an 8 x 8 block, through registers
  // (unpack / shuffle / permute: 24 shuffles for 8 loads and 8 stores, no scalar scatter).
  static void transpose8(const float* src, int64_t lds, float* dst, int64_t ldd) {
    __m256 r[8], t[8], u[8];
    for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * lds);
    for (int i = 0; i < 8; i += 2) {
      t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
      u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
      u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
      u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
      u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 4; ++i) {
      _mm256_storeu_ps(dst + i * ldd, _mm256_permute2f128_ps(u[i], u[i + 4], 0x20));
      _mm256_storeu_ps(dst + (i + 4) * ldd, _mm256_permute2f128_ps(u[i], u[i + 4], 0x31));
    }
  }
  static void opaque(R& a) { __asm__ volatile("" : "+x"(a)); }
};
#else
struct Vec {
  using R = float;
  static constexpr int W = 1;
  static R zero() { return 0.0f; }
  static R set1(float a) { return a; }
  static R load(const float* p) { return *p; }
  static void store(float* p, R a) { *p = a; }
  static R load_n(const float* p, int64_t) { return *p; }
  static void store_n(float* p, R a, int64_t) { *p = a; }
  static R add(R a, R b) { return a + b; }
  static R sub(R a, R b) { return a - b; }
  static R mul(R a, R b) { return a * b; }
  static R div(R a, R b) { return a / b; }
  // One rounding, as the FMA instructions of the other copies: fmaf (the instruction where
  // the CPU has it, glibc's correctly rounded software fma where it does not).
  static R fmadd(R a, R b, R c) { return __builtin_fmaf(a, b, c); }
  static R fmsub(R a, R b, R c) { return __builtin_fmaf(a, b, -c); }
  static R fnmadd(R a, R b, R c) { return __builtin_fmaf(-a, b, c); }
  static R min(R a, R b) { return a < b ? a : b; }
  static R max(R a, R b) { return a > b ? a : b; }
  static R round(R a) { return nearbyintf(a); }
  static R ldexp(R p, R k) { return ldexpf(p, int(k)); }
  static R ldexp127(R p, R k) { return ldexpf(p, int(k)); }
  static R lt_zero(R x, R lim, R v) { return x < lim ? 0.0f : v; }
  static R ftz(R a) {
    uint32_t u;
    memcpy(&u, &a, 4);
    if ((u & 0x7f800000u) == 0) u &= 0x80000000u;
    memcpy(&a, &u, 4);
    return a;
  }
  static float hsum_w(R a) { return a; }
  static float hmax(R a) { return a; }
  static void opaque(R& a) { __asm__ volatile("" : "+m"(a)); }
};
#endif

// c[0] f^(N-1) + c[1] f^(N-2) + ... + c[N-1] by Horner's rule: N-1 fused multiply-adds, highest
// degree first (one rounding each). The one polynomial evaluation of the exp functions below.
// c must be a constant array.
template <size_t N>
inline Vec::R vpoly(Vec::R f, const float (&c)[N]) {
  Vec::R p = Vec::set1(c[0]);
#pragma GCC unroll 16
  for (size_t i = 1; i < N; ++i) p = Vec::fmadd(p, f, Vec::set1(c[i]));
  return p;
}

// e^x: x = k ln2 + r (|r| <= ln2/2, Cody-Waite split of ln2), degree-6 Cephes polynomial for
// e^r, then 2^k. x is clamped to [-87.34, 88.38] (k in [-126, 128]), so e^x saturates cleanly.
inline Vec::R vexp(Vec::R x) {
  x = Vec::min(Vec::max(x, Vec::set1(-87.33654f)), Vec::set1(88.37626f));
  const Vec::R k = Vec::round(Vec::mul(x, Vec::set1(1.44269504088896341f)));
  Vec::R r = Vec::fnmadd(k, Vec::set1(0.693359375f), x);
  r = Vec::fnmadd(k, Vec::set1(-2.12194440e-4f), r);
  static constexpr float c[] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
  Vec::R p = vpoly(r, c);
  p = Vec::fmadd(Vec::mul(p, r), r, r);
  p = Vec::add(p, Vec::set1(1.0f));
  return Vec::ldexp(p, k);
}

// 2^x for x <= 0 (softmax arguments s - max): n = round(x), f = x - n in [-0.5, 0.5], degree-7
// polynomial, then 2^n; 0 for x < -126 (including -inf), so masked entries vanish.
inline Vec::R vexp2(Vec::R x) {
  const Vec::R lim = Vec::set1(-126.0f);
  const Vec::R xc = Vec::min(Vec::max(x, lim), Vec::set1(126.0f));
  const Vec::R n = Vec::round(xc);
  const Vec::R f = Vec::sub(xc, n);
  static constexpr float c[] = {1.5252733804059840e-05f, 1.5403530393381606e-04f,
                                1.3333558146428443e-03f, 9.6181291076284772e-03f,
                                5.5504108664821580e-02f, 2.4022650695910071e-01f,
                                6.9314718055994531e-01f, 1.0f};
  const Vec::R p = vpoly(f, c);
  return Vec::lt_zero(x, lim, Vec::ldexp127(p, n));
}


// V16: 16 virtual fp32 lanes -- one zmm, two ymm or 16 floats -- for every reduction across
// elements. Element i of a run summed with V16 always lands in lane i % 16, each lane is
// accumulated in element order, and hsum / hmax close the 16 lanes with one fixed tree
// (t[l] = x[l] + x[l + 8], then + 4, + 2, + 1): the same operations in the same order on every
// ISA, so the same bits. Cost: as Vec (N = 16 / W registers per V16).
struct V16 {
  static constexpr int N = 16 / Vec::W;
  Vec::R r[N];
  static V16 zero() { return set1(0.0f); }
  static V16 set1(float a) {
    V16 v;
#pragma GCC unroll 16
    for (int i = 0; i < N; ++i) v.r[i] = Vec::set1(a);
    return v;
  }
  static V16 load(const float* p) {
    V16 v;
#pragma GCC unroll 16
    for (int i = 0; i < N; ++i) v.r[i] = Vec::load(p + i * Vec::W);
    return v;
  }
  // The first n (< 16) lanes from p, the rest `fill`.
  static V16 load_fill(const float* p, int64_t n, float fill) {
    float t[16];
    for (int64_t l = 0; l < 16; ++l) t[l] = l < n ? p[l] : fill;
    return load(t);
  }
  void store(float* p) const {
#pragma GCC unroll 16
    for (int i = 0; i < N; ++i) Vec::store(p + i * Vec::W, r[i]);
  }
#define OLMO_V16_OP2(name)                                  \
  static V16 name(const V16& a, const V16& b) {             \
    V16 v;                                                  \
    _Pragma("GCC unroll 16") for (int i = 0; i < N; ++i) v.r[i] = Vec::name(a.r[i], b.r[i]); \
    return v;                                               \
  }
  OLMO_V16_OP2(add)
  OLMO_V16_OP2(sub)
  OLMO_V16_OP2(mul)
  OLMO_V16_OP2(max)
#undef OLMO_V16_OP2
  static V16 fmadd(const V16& a, const V16& b, const V16& c) {
    V16 v;
#pragma GCC unroll 16
    for (int i = 0; i < N; ++i) v.r[i] = Vec::fmadd(a.r[i], b.r[i], c.r[i]);
    return v;
  }
  static float hsum(const V16& a) {
    float t[16];
    a.store(t);
    for (int w = 8; w >= 1; w /= 2)
      for (int l = 0; l < w; ++l) t[l] = t[l] + t[l + w];
    return t[0];
  }
  static float hmax(const V16& a) {
    float t[16];
    a.store(t);
    for (int w = 8; w >= 1; w /= 2)
      for (int l = 0; l < w; ++l) t[l] = t[l] > t[l + w] ? t[l] : t[l + w];
    return t[0];
  }
};

// log2(x) and ln(x) of one float (a row's softmax sum: called once per row), in double with
// IEEE operations only (the same on every ISA and machine), then rounded once: x = 2^e m,
// m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(t), t = (m - 1) / (m + 1), |t| <= 0.1716, series to
// t^17 (truncation < 1e-14 relative). 0 -> -inf, +inf -> +inf, negative or NaN -> NaN.
inline double vlog_d(float x, double* e_out) {
  uint32_t u;
  memcpy(&u, &x, 4);
  int e = 0;
  if (u < 0x00800000u) {  // denormal: scale into the normal range (exact)
    x *= 8388608.0f;
    memcpy(&u, &x, 4);
    e = -23;
  }
  e += int(u >> 23) - 127;
  u = (u & 0x007fffffu) | 0x3f800000u;
  float mf;
  memcpy(&mf, &u, 4);
  double m = mf;
  if (m > 1.4142135623730951) m *= 0.5, e += 1;
  const double t = (m - 1.0) / (m + 1.0), t2 = t * t;
  double p = 1.0 / 17;
  for (int k = 15; k >= 1; k -= 2) p = p * t2 + 1.0 / k;
  *e_out = e;
  return 2.0 * t * p;  // ln m
}
inline float vlog2(float x) {
  if (!(x > 0.0f) || x == INFINITY) return x == 0.0f ? -INFINITY : x == INFINITY ? x : NAN;
  double e;
  const double lm = vlog_d(x, &e);
  return float(e + lm * 1.4426950408889634074);
}
inline float vlog(float x) {
  if (!(x > 0.0f) || x == INFINITY) return x == 0.0f ? -INFINITY : x == INFINITY ? x : NAN;
  double e;
  const double lm = vlog_d(x, &e);
  return float(e * 0.69314718055994530942 + lm);
}

}  // namespace
