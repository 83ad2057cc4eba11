// Internal: the bulk kernels of distributed/scaled_fixed.h (int64 fixed point with a power-of-two
// scale per segment), written once over GCC vector extensions of OLMO_SIMD_BYTES bytes (the
// width kernels/simd.h picks from the compiler flags: 64 AVX-512, 32 AVX2, 16 the SSE2 baseline)
// and stamped per ISA like every kernel body: scaled_fixed.cpp (baseline copy),
// stamp_avx2.cpp, stamp_avx512.cpp; scaled_fixed.cpp dispatches with OLMO_DISPATCH. Integer
// and double arithmetic with branch-free selects: every lane computes exactly what the
// scalar reference (scaled_fixed.cpp, *_reference) computes, so every ISA gives the same bits
// (IEEE double arithmetic in round-to-nearest: the compiler may not reassociate it, no -ffast-math).
//
// q = round_half_even(x * 2^shift) for |x * 2^shift| < 2^62, computed in double (see
// sfx_quantise: exact steps and one magic-constant rounding; no float-to-int64 instruction is
// needed, which AVX2 lacks). The AVX-512 copy (AVX512DQ) rounds with VCVTPD2QQ instead: one
// instruction, the same integers (exact for |y| < 2^63, round-half-even by its embedded mode).
// Flags (returned, ORed): kOverflow when a finite |x| has e >= limit (|x| >= 2^(limit - 127)),
// kNonFinite for inf / NaN (e == 255). The largest finite e seen is returned through *emax.
// Cost per vector: ~15 ops (AVX2: 4 lanes; AVX-512: 8 lanes, ~9 ops with VCVTPD2QQ); all-zero
// vectors skip the arithmetic.
#pragma once
#include <stdint.h>

#include "kernels/simd.h"  // OLMO_ISA_NS, OLMO_SIMD_BYTES, <immintrin.h> in the AVX copies

#define OLMO_SCALED_FIXED_BODY_DECLS                                                              \
  /* acc[i] (+)= round(xs[0][at + i] * 2^shift) + ... + round(xs[k-1][at + i] * 2^shift)      */  \
  /* (k >= 0 sources, integer adds); accumulate 0 stores, 1 adds. Returns the flags.          */  \
  /* clear (xs[k-1] + at or null): zeroed after it is read. round_out (or null):              */  \
  /* round_out[i] = the sum rounded as sfx_to_float rounds it, and acc is not written.        */  \
  uint32_t sfx_run(int64_t* acc, const float* const* xs, int32_t k, int64_t at, int64_t n,        \
                   int32_t shift, uint32_t limit, uint32_t* emax, int32_t accumulate,             \
                   float* clear, float* round_out);                                               \
  /* out[i] = float(q[i] * 2^-shift): int64 -> float (one rounding), exact scaling. */         \
  void sfx_to_float(float* out, const int64_t* q, int64_t n, int32_t shift);                     \
  /* acc[i] += add[i] (int64). */                                                                \
  void sfx_add(int64_t* acc, const int64_t* add, int64_t n);

namespace olmo::dist {
OLMO_FOR_EACH_ISA(OLMO_SCALED_FIXED_BODY_DECLS)

namespace OLMO_ISA_NS {

typedef int64_t sfx_i64v __attribute__((vector_size(OLMO_SIMD_BYTES)));
typedef double sfx_f64v __attribute__((vector_size(OLMO_SIMD_BYTES)));
typedef uint32_t sfx_u32h __attribute__((vector_size(OLMO_SIMD_BYTES / 2)));
typedef int32_t sfx_i32h __attribute__((vector_size(OLMO_SIMD_BYTES / 2)));
typedef float sfx_f32h __attribute__((vector_size(OLMO_SIMD_BYTES / 2)));
enum { kSfxLanes = OLMO_SIMD_BYTES / 8 };

// One vector of kSfxLanes floats (bits w). The value path runs in double, where every step is
// exact or one round-half-even: y = x * 2^shift is exact (a float times a power of two);
// h = round(y / 2^32) by the 1.5 * 2^52 magic add (|y / 2^32| < 2^30 for an accepted element);
// l = y - h * 2^32 is exact (|l| <= 2^31; for |y| < 2^24, h = 0 and l = y); round(l) by the
// magic add again (the only rounding: l holds y's fraction), and q = h * 2^32 + round(l).
// flags |= 1 (overflow: e >= limit, finite) / 2 (non-finite) per lane; emax = lane-wise max
// of finite exponents.
// AVX512DQ (the AVX-512 copy): q = VCVTPD2QQ(y) with the rounding mode embedded in the
// instruction (to nearest even, whatever MXCSR says): exact for |y| < 2^63, so the same integer
// as the two magic-constant roundings for every accepted element (|y| < 2^62). A flagged
// element's value is unspecified either way (the step is redone or skipped).
static inline sfx_i64v sfx_quantise(sfx_u32h w, double scale, uint32_t limit, sfx_u32h& flags,
                                    sfx_u32h& emax) {
  sfx_f32h xf;
  __builtin_memcpy(&xf, &w, sizeof xf);
  const sfx_f64v y = __builtin_convertvector(xf, sfx_f64v) * scale;
#if defined(__AVX512DQ__) && OLMO_SIMD_BYTES == 64
  const sfx_i64v q =
      (sfx_i64v)_mm512_cvt_roundpd_epi64((__m512d)y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#else
  const sfx_f64v zero = {};
  const sfx_f64v magic = zero + 0x1.8p52, two32 = zero + 0x1p32, inv32 = zero + 0x1p-32;
  const sfx_f64v hd = (y * inv32 + magic) - magic;
  const sfx_f64v l = y - hd * two32;
  const sfx_i64v hi = (sfx_i64v)(hd + magic) - (sfx_i64v)magic;
  const sfx_i64v lo = (sfx_i64v)(l + magic) - (sfx_i64v)magic;
  const sfx_i64v q = (hi << 32) + lo;
#endif
  const sfx_u32h e = (w >> 23) & 0xff;
  const sfx_u32h fin = (sfx_u32h)(e != 255);
  flags |= ((sfx_u32h)(e >= limit) & fin & 1) | (~fin & 2);
  emax = (sfx_u32h)((sfx_i32h)(fin & e) > (sfx_i32h)emax ? (sfx_i32h)(fin & e) : (sfx_i32h)emax);
  return q;
}

// float(q * 2^-shift), inv = 2^-shift: int64 -> float rounds to nearest even once; the scaling
// (a normal double for |shift| < 1000) is exact in double, and so is the final float conversion
// unless the result is below the normal float range (then a second rounding, the same on every
// ISA). The one rounding of the format: sfx_to_float and sfx_run's round_out both use it.
static inline float sfx_round(int64_t q, double inv) { return float(double(float(q)) * inv); }

// 2^e for |e| < 1000 (a normal double), built from its bits.
static inline double sfx_pow2(int32_t e) {
  union {
    uint64_t u;
    double d;
  } sc;
  sc.u = uint64_t(1023 + e) << 52;
  return sc.d;
}

// sfx_run's body for K sources known at compile time (K > 0) or k at run time (K = 0).
template <int K>
static inline uint32_t sfx_run_k(int64_t* acc, const float* const* xs, int32_t nk, int64_t at,
                                 int64_t n, int32_t shift, uint32_t limit, uint32_t* emax_out,
                                 int32_t accumulate, float* clear, float* round_out) {
  const int32_t k = K > 0 ? K : nk;
  sfx_u32h flags = {}, emax = {};
  const double scale = sfx_pow2(shift), inv = sfx_pow2(-shift);
  const sfx_f32h zf = {};
  int64_t i = 0;
  for (; i + kSfxLanes <= n; i += kSfxLanes) {
    // All-zero vectors (the embedding gradient outside the micro-batch's rows): adding 0
    // changes nothing (no arithmetic; nothing stored when every source's vector is zero and
    // acc is added to); a store writes zeros.
    sfx_i64v q = {};
    uint32_t any = 0;
    for (int32_t j = 0; j < k; ++j) {
      sfx_u32h w;
      __builtin_memcpy(&w, xs[j] + at + i, sizeof w);
      sfx_u32h nz = w & 0x7fffffffu;
      uint32_t some = 0;
      for (int l = 0; l < kSfxLanes; ++l) some |= nz[l];
      if (some != 0) q += sfx_quantise(w, scale, limit, flags, emax);
      any |= some;
    }
    if (any != 0 || round_out || !accumulate) {
      if (accumulate) {
        sfx_i64v a;
        __builtin_memcpy(&a, acc + i, sizeof a);
        q += a;
      }
      if (round_out)
        for (int l = 0; l < kSfxLanes; ++l) round_out[i + l] = sfx_round(q[l], inv);
      else
        __builtin_memcpy(acc + i, &q, sizeof q);
    }
    if (clear) __builtin_memcpy(clear + i, &zf, sizeof zf);
  }
  uint32_t f = 0, em = *emax_out;
  for (int l = 0; l < kSfxLanes; ++l) {
    f |= flags[l];
    if (emax[l] > em) em = emax[l];
  }
  for (; i < n; ++i) {  // tail, one lane at a time through the same function
    int64_t q = accumulate ? acc[i] : 0;
    for (int32_t j = 0; j < k; ++j) {
      sfx_u32h w = {}, fl = {}, ex = {};
      __builtin_memcpy(&w, xs[j] + at + i, 4);
      q += sfx_quantise(w, scale, limit, fl, ex)[0];
      f |= fl[0];
      if (ex[0] > em) em = ex[0];
    }
    if (round_out)
      round_out[i] = sfx_round(q, inv);
    else
      acc[i] = q;
    if (clear) clear[i] = 0.0f;
  }
  *emax_out = em;
  return f;
}

uint32_t sfx_run(int64_t* acc, const float* const* xs, int32_t k, int64_t at, int64_t n,
                 int32_t shift, uint32_t limit, uint32_t* emax_out, int32_t accumulate,
                 float* clear, float* round_out) {
  // One source (every conversion but the deferred pass): the loop over sources unrolled.
  if (k == 1)
    return sfx_run_k<1>(acc, xs, k, at, n, shift, limit, emax_out, accumulate, clear, round_out);
  return sfx_run_k<0>(acc, xs, k, at, n, shift, limit, emax_out, accumulate, clear, round_out);
}

void sfx_to_float(float* out, const int64_t* q, int64_t n, int32_t shift) {
  const double inv = sfx_pow2(-shift);
  for (int64_t i = 0; i < n; ++i) out[i] = sfx_round(q[i], inv);
}

void sfx_add(int64_t* acc, const int64_t* add, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += add[i];
}

}  // namespace OLMO_ISA_NS
}  // namespace olmo::dist
