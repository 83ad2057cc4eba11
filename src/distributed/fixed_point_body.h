// Internal: the bulk fixed-point kernels of dist/fixed_point.h on structure-of-arrays 128-bit
// integers (value = hi * 2^64 + lo, two's complement, hi and lo in separate uint64 arrays, so
// the loops vectorise). Written once over GCC vector extensions of OLMO_SIMD_BYTES bytes (the
// SIMD width kernels/simd.h picks from the compiler flags: 64 AVX-512, 32 AVX2, 16 the SSE2
// baseline; u64v = OLMO_SIMD_BYTES / 8 lanes of uint64) and stamped per ISA like every kernel
// body: fixed_point.cpp (scalar/baseline copy), stamp_avx2.cpp, stamp_avx512.cpp; fixed_point.cpp
// dispatches with OLMO_DISPATCH. Branch-free selects and clamped shifts, so every lane computes
// exactly what the scalar float_to_fixed does: all ISAs give the same bits. The last partial
// vector goes through a zero-padded temporary. Only builtins here (no std:: templates).
//
// float bits -> m * 2^sh with m = 24-bit mantissa (implicit bit), sh = exponent - 150 + 88:
//   sh >= 64:       lo = 0,              hi = m << (sh - 64)
//   0 <= sh < 64:   lo = m << sh,        hi = sh > 0 ? m >> (64 - sh) : 0
//   sh < 0:         lo = round_half_even(m / 2^-sh), hi = 0      (sh >= -61 for every float)
// then two's-complement negation for negative x and a 128-bit add with carry.
#pragma once
#include <stdint.h>

#include "kernels/simd.h"

#define OLMO_FIXED_BODY_DECLS                                                                    \
  /* (lo, hi)[i] += round(x[i] * 2^88); returns nonzero if any |x| >= 2^28 or non-finite. */     \
  uint32_t fx_accumulate(uint64_t* lo, uint64_t* hi, const float* x, int64_t n);                 \
  /* (lo, hi)[i] = round(x[i] * 2^88); same flag. */                                             \
  uint32_t fx_convert(uint64_t* lo, uint64_t* hi, const float* x, int64_t n);                    \
  /* (lo, hi)[i] += (lo2, hi2)[i]. */                                                            \
  void fx_add(uint64_t* lo, uint64_t* hi, const uint64_t* lo2, const uint64_t* hi2, int64_t n); \
  /* out[i] = nearest float to (hi, lo)[i] * 2^-88 (one rounding). */                            \
  void fx_to_float(float* out, const uint64_t* lo, const uint64_t* hi, int64_t n);

namespace olmo::dist {
OLMO_FOR_EACH_ISA(OLMO_FIXED_BODY_DECLS)

namespace OLMO_ISA_NS {

typedef uint64_t u64v __attribute__((vector_size(OLMO_SIMD_BYTES)));
typedef int64_t i64v __attribute__((vector_size(OLMO_SIMD_BYTES)));
typedef uint32_t u32h __attribute__((vector_size(OLMO_SIMD_BYTES / 2)));
typedef float f32h __attribute__((vector_size(OLMO_SIMD_BYTES / 2)));
enum { kLanes = OLMO_SIMD_BYTES / 8 };

static inline u64v fx_sel(u64v mask, u64v a, u64v b) { return (a & mask) | (b & ~mask); }
static inline u64v fx_mask(i64v cmp) { return (u64v)cmp; }  // lanes of all ones / zeros

// Returns lanes of all ones where |x| >= 2^28, inf or NaN.
static inline u64v fx_split(u64v b, u64v& vlo, u64v& vhi) {
  const u64v e = (b >> 23) & 0xff;
  const u64v enz = fx_mask((i64v)e != 0);
  const u64v m = (b & 0x7fffff) | (enz & 0x800000);
  const i64v sh = (i64v)fx_sel(enz, e, e | 1) - 62;
  const u64v neg_sh = fx_mask(sh < 0), ge64 = fx_mask(sh >= 64), pos = fx_mask(sh > 0);
  const i64v zero = sh - sh;
  // 0 <= sh < 64: lo = m << sh
  const u64v sl = (u64v)(sh < 0 ? zero : (sh > 63 ? zero + 63 : sh));
  const u64v left_lo = fx_sel(ge64, (u64v)zero, m << sl);
  // hi
  const u64v shl = fx_sel(ge64, (u64v)((sh - 64) & 63), (u64v)zero);
  const u64v shr = fx_sel(pos & ~ge64, (u64v)(64 - sh), (u64v)zero + 1);
  const u64v hi = fx_sel(ge64, m << shl, fx_sel(pos, m >> shr, (u64v)zero));
  // sh < 0: round half to even
  const u64v r = fx_sel(neg_sh, (u64v)(zero - sh), (u64v)zero + 1);
  const u64v q = m >> r;
  const u64v one = (u64v)zero + 1;
  const u64v rem = m & ((one << r) - 1);
  const u64v half = one << (r - 1);
  const u64v up = fx_mask((i64v)(rem > half)) | (fx_mask((i64v)(rem == half)) & (0 - (q & 1)));
  const u64v rq = q + (up & 1);
  const u64v lo = fx_sel(neg_sh, rq, left_lo);
  // two's complement when negative
  const u64v neg = b >> 31, mask = 0 - neg;
  vlo = (lo ^ mask) + neg;
  vhi = (hi ^ mask) + (neg & fx_mask((i64v)(lo == 0)) & 1);
  return fx_mask((i64v)(e >= 155));
}

static inline u64v fx_load_bits(const float* x) {
  u32h w;
  __builtin_memcpy(&w, x, sizeof w);
  return __builtin_convertvector(w, u64v);
}

template <bool kAccumulate>
static inline uint32_t fx_run(uint64_t* lo, uint64_t* hi, const float* x, int64_t n) {
  u64v bad = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    u64v vlo, vhi, alo, ahi;
    const u64v bits = fx_load_bits(x + i);
    // All-zero vectors (the embedding gradient is zero outside the rows of the micro-batch's
    // tokens): adding +-0 changes nothing, so the accumulator's read-modify-write is skipped;
    // a conversion stores zeros without the arithmetic.
    {
      u64v nz = bits & 0x7fffffffull;
      uint64_t any = 0;
      for (int l = 0; l < kLanes; ++l) any |= nz[l];
      if (any == 0) {
        if (!kAccumulate) {
          const u64v z = {};
          __builtin_memcpy(lo + i, &z, sizeof z);
          __builtin_memcpy(hi + i, &z, sizeof z);
        }
        continue;
      }
    }
    bad |= fx_split(bits, vlo, vhi);
    if (kAccumulate) {
      __builtin_memcpy(&alo, lo + i, sizeof alo);
      __builtin_memcpy(&ahi, hi + i, sizeof ahi);
      const u64v s = alo + vlo;
      vhi = ahi + vhi + (fx_mask((i64v)(s < vlo)) & 1);
      vlo = s;
    }
    __builtin_memcpy(lo + i, &vlo, sizeof vlo);
    __builtin_memcpy(hi + i, &vhi, sizeof vhi);
  }
  if (i < n) {  // tail through zero-padded temporaries
    float tx[kLanes] = {};
    uint64_t tlo[kLanes] = {}, thi[kLanes] = {};
    const int64_t k = n - i;
    __builtin_memcpy(tx, x + i, (unsigned long)k * 4);
    __builtin_memcpy(tlo, lo + i, (unsigned long)k * 8);
    __builtin_memcpy(thi, hi + i, (unsigned long)k * 8);
    if (fx_run<kAccumulate>(tlo, thi, tx, kLanes)) bad = bad | 1;
    __builtin_memcpy(lo + i, tlo, (unsigned long)k * 8);
    __builtin_memcpy(hi + i, thi, (unsigned long)k * 8);
  }
  uint64_t any = 0;
  for (int l = 0; l < kLanes; ++l) any |= bad[l];
  return any != 0;
}

uint32_t fx_accumulate(uint64_t* lo, uint64_t* hi, const float* x, int64_t n) {
  return fx_run<true>(lo, hi, x, n);
}

uint32_t fx_convert(uint64_t* lo, uint64_t* hi, const float* x, int64_t n) {
  return fx_run<false>(lo, hi, x, n);
}

void fx_add(uint64_t* lo, uint64_t* hi, const uint64_t* lo2, const uint64_t* hi2, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t s = lo[i] + lo2[i];
    hi[i] = hi[i] + hi2[i] + uint64_t(s < lo2[i]);
    lo[i] = s;
  }
}

// One correct rounding of the 128-bit magnitude (hi, lo) to float: with a sticky bit ORed below
// the bits that can reach the float's round position, a single uint64 -> float conversion rounds
// exactly as the full value would:
//   hi == 0:            float(lo)
//   0 < hi < 2^26:      float((hi << 32) | (lo >> 32) | sticky(lo mod 2^32)) * 2^32
//   hi >= 2^26:         float(hi | sticky(lo)) * 2^64
// then * 2^-88 (exact: every nonzero result is >= 2^-88, a normal float) and the sign.
static inline void fx_to_float_vec(float* out, u64v lo, u64v hi) {
  const u64v neg = fx_mask((i64v)hi < 0);
  const u64v nlo = ~lo + 1, nhi = ~hi + (fx_mask((i64v)(lo == 0)) & 1);
  lo = fx_sel(neg, nlo, lo);
  hi = fx_sel(neg, nhi, hi);
  const u64v zero = lo - lo;
  const u64v hz = fx_mask((i64v)(hi == 0)), big = fx_mask((i64v)(hi >= (zero + (1ull << 26))));
  const u64v mid_t = (hi << 32) | (lo >> 32) | (fx_mask((i64v)((lo & 0xffffffffull) != 0)) & 1);
  const u64v big_t = hi | (fx_mask((i64v)(lo != 0)) & 1);
  const u64v t = fx_sel(hz, lo, fx_sel(big, big_t, mid_t));
  f32h f = __builtin_convertvector(t, f32h);
  // scale: 2^-88 (hi == 0), 2^-56 (mid), 2^-24 (big)
  const u32h scale_bits = __builtin_convertvector(
      fx_sel(hz, zero + ((127ull - 88) << 23), fx_sel(big, zero + ((127ull - 24) << 23), zero + ((127ull - 56) << 23))),
      u32h);
  f32h scale;
  __builtin_memcpy(&scale, &scale_bits, sizeof scale);
  f = f * scale;
  u32h fb;
  __builtin_memcpy(&fb, &f, sizeof fb);
  fb = fb | (__builtin_convertvector(neg, u32h) & 0x80000000u);
  __builtin_memcpy(out, &fb, sizeof fb);
}

void fx_to_float(float* out, const uint64_t* lo, const uint64_t* hi, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    u64v vlo, vhi;
    __builtin_memcpy(&vlo, lo + i, sizeof vlo);
    __builtin_memcpy(&vhi, hi + i, sizeof vhi);
    fx_to_float_vec(out + i, vlo, vhi);
  }
  if (i < n) {
    uint64_t tlo[kLanes] = {}, thi[kLanes] = {};
    float tout[kLanes];
    const int64_t k = n - i;
    __builtin_memcpy(tlo, lo + i, (unsigned long)k * 8);
    __builtin_memcpy(thi, hi + i, (unsigned long)k * 8);
    u64v vlo, vhi;
    __builtin_memcpy(&vlo, tlo, sizeof vlo);
    __builtin_memcpy(&vhi, thi, sizeof vhi);
    fx_to_float_vec(tout, vlo, vhi);
    __builtin_memcpy(out + i, tout, (unsigned long)k * 4);
  }
}

}  // namespace OLMO_ISA_NS
}  // namespace olmo::dist
