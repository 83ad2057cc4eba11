// Internal: the bulk kernels of distributed/scaled_fixed.h (int64 fixed point with a power-of-two
// scale per segment), written once over GCC vector extensions of OLMO_SIMD_BYTES bytes (the
// width kernels/simd.h picks from the compiler flags: 64 AVX-512, 32 AVX2, 16 the SSE2 baseline)
// and stamped per ISA like every kernel body: scaled_fixed.cpp (baseline copy),
// stamp_avx2.cpp, stamp_avx512.cpp; scaled_fixed.cpp dispatches with OLMO_DISPATCH. Integer
// arithmetic with branch-free selects and clamped shifts: every lane computes exactly what the
// scalar reference (scaled_fixed.cpp, *_reference) computes, so every ISA gives the same bits.
//
// float bits (e = biased exponent, m = 24-bit mantissa with the implicit bit) -> q:
//   x = m * 2^(max(e,1) - 150);  q = round_half_even(m * 2^sh),  sh = max(e,1) - 150 + shift
//   sh >= 0: q = m << sh;   sh < 0: q = (m >> -sh) rounded half to even (0 once -sh >= 26)
//   negative x: q = -q.
// Flags (returned, ORed): kOverflow when a finite |x| has e >= limit (|x| >= 2^(limit - 127)),
// kNonFinite for inf / NaN (e == 255). The largest finite e seen is returned through *emax.
// Cost per element: ~20 vector integer ops (AVX2: 4 lanes); all-zero vectors skip the arithmetic.
#pragma once
#include <stdint.h>

#include "kernels/simd.h"

#define OLMO_SCALED_FIXED_BODY_DECLS                                                              \
  /* acc[i] (+)= round(x[i] * 2^shift); kAccumulate 0 stores, 1 adds. Returns the flags. */       \
  uint32_t sfx_run(int64_t* acc, const float* x, int64_t n, int32_t shift, uint32_t limit,       \
                   uint32_t* emax, int32_t accumulate);                                          \
  /* out[i] = float(q[i] * 2^-shift): int64 -> float (one rounding), exact scaling. */         \
  void sfx_to_float(float* out, const int64_t* q, int64_t n, int32_t shift);                     \
  /* acc[i] += add[i] (int64). */                                                                \
  void sfx_add(int64_t* acc, const int64_t* add, int64_t n);

namespace olmo::dist {
OLMO_FOR_EACH_ISA(OLMO_SCALED_FIXED_BODY_DECLS)

namespace OLMO_ISA_NS {

typedef uint64_t sfx_u64v __attribute__((vector_size(OLMO_SIMD_BYTES)));
typedef int64_t sfx_i64v __attribute__((vector_size(OLMO_SIMD_BYTES)));
typedef uint32_t sfx_u32h __attribute__((vector_size(OLMO_SIMD_BYTES / 2)));
enum { kSfxLanes = OLMO_SIMD_BYTES / 8 };

static inline sfx_u64v sfx_sel(sfx_u64v mask, sfx_u64v a, sfx_u64v b) {
  return (a & mask) | (b & ~mask);
}

// One vector of kSfxLanes floats (their bits widened to u64 lanes). flags |= 1 (overflow) / 2
// (non-finite) per lane; emax = lane-wise max of finite exponents.
static inline sfx_i64v sfx_quantise(sfx_u64v b, int64_t shift_m150, sfx_u64v lim, sfx_u64v& flags,
                                    sfx_u64v& emax) {
  const sfx_u64v zero = b - b, one = zero + 1;
  const sfx_u64v e = (b >> 23) & 0xff;
  const sfx_u64v enz = (sfx_u64v)(e != 0);
  const sfx_u64v fin = (sfx_u64v)(e != 255);
  const sfx_u64v m = (b & 0x7fffff) | (enz & 0x800000);
  const sfx_i64v sh = (sfx_i64v)(e | (~enz & 1)) + shift_m150;
  const sfx_u64v left = (sfx_u64v)(sh >= 0);
  // left shift, clamped to [0, 63] (a larger one only happens for an overflowed lane)
  const sfx_u64v sl = (sfx_u64v)(sh < 0 ? (sfx_i64v)zero : (sh > 63 ? (sfx_i64v)zero + 63 : sh));
  // right shift r = -sh, clamped to [1, 26]: m < 2^24, so r >= 26 rounds to 0 as r = 26 does
  const sfx_i64v nsh = -sh;
  const sfx_u64v r = (sfx_u64v)(nsh < 1 ? (sfx_i64v)one : (nsh > 26 ? (sfx_i64v)zero + 26 : nsh));
  const sfx_u64v q = m >> r;
  const sfx_u64v rem = m & ((one << r) - 1);
  const sfx_u64v half = one << (r - 1);
  const sfx_u64v up = (sfx_u64v)(rem > half) | ((sfx_u64v)(rem == half) & (zero - (q & 1)));
  const sfx_u64v mag = sfx_sel(left, m << sl, q + (up & 1));
  const sfx_u64v neg = zero - (b >> 31);
  flags |= ((sfx_u64v)(e >= lim) & fin & 1) | (~fin & 2);
  emax = sfx_sel(fin & (sfx_u64v)(e > emax), e, emax);
  return (sfx_i64v)((mag ^ neg) - neg);
}

uint32_t sfx_run(int64_t* acc, const float* x, int64_t n, int32_t shift, uint32_t limit,
                 uint32_t* emax_out, int32_t accumulate) {
  sfx_u64v flags = {}, emax = {};
  const sfx_u64v lim = (sfx_u64v){} + limit;
  const int64_t shift_m150 = int64_t(shift) - 150;
  int64_t i = 0;
  for (; i + kSfxLanes <= n; i += kSfxLanes) {
    sfx_u32h w;
    __builtin_memcpy(&w, x + i, sizeof w);
    // All-zero vectors (the embedding gradient outside the micro-batch's rows): adding 0
    // changes nothing; a store writes zeros without the arithmetic.
    sfx_u32h nz = w & 0x7fffffffu;
    uint32_t any = 0;
    for (int l = 0; l < kSfxLanes; ++l) any |= nz[l];
    if (any == 0) {
      if (!accumulate) {
        const sfx_i64v z = {};
        __builtin_memcpy(acc + i, &z, sizeof z);
      }
      continue;
    }
    sfx_i64v q = sfx_quantise(__builtin_convertvector(w, sfx_u64v), shift_m150, lim, flags, emax);
    if (accumulate) {
      sfx_i64v a;
      __builtin_memcpy(&a, acc + i, sizeof a);
      q += a;
    }
    __builtin_memcpy(acc + i, &q, sizeof q);
  }
  uint32_t f = 0, em = *emax_out;
  for (int l = 0; l < kSfxLanes; ++l) {
    f |= uint32_t(flags[l]);
    if (uint32_t(emax[l]) > em) em = uint32_t(emax[l]);
  }
  for (; i < n; ++i) {  // tail, one lane at a time through the same function
    uint32_t bits;
    __builtin_memcpy(&bits, x + i, 4);
    sfx_u64v b = {}, fl = {}, ex = {};
    b[0] = bits;
    const sfx_i64v q = sfx_quantise(b, shift_m150, lim, fl, ex);
    acc[i] = (accumulate ? acc[i] : 0) + q[0];
    f |= uint32_t(fl[0]);
    if (uint32_t(ex[0]) > em) em = uint32_t(ex[0]);
  }
  *emax_out = em;
  return f;
}

void sfx_to_float(float* out, const int64_t* q, int64_t n, int32_t shift) {
  // int64 -> float rounds to nearest even once; the scaling by 2^-shift (a normal double for
  // |shift| < 1000) is exact in double, and so is the final float conversion unless the result
  // is below the normal float range (then a second rounding, the same on every ISA).
  union {
    uint64_t u;
    double d;
  } sc;
  sc.u = uint64_t(1023 - shift) << 52;
  for (int64_t i = 0; i < n; ++i) out[i] = float(double(float(q[i])) * sc.d);
}

void sfx_add(int64_t* acc, const int64_t* add, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += add[i];
}

}  // namespace OLMO_ISA_NS
}  // namespace olmo::dist
