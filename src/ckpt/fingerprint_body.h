// Internal: the inner sum of ckpt/fingerprint.h, sum_j uint32(w[j] * b[j]) over 32-bit words
// with 32-bit coefficients (the products wrap at 2^32, their sum does not), written once over GCC vector extensions of
// OLMO_SIMD_BYTES bytes (kernels/simd.h: 64 AVX-512, 32 AVX2, 16 the SSE2 baseline) and stamped
// per ISA like every kernel body: fingerprint.cpp (baseline copy), stamp_avx2.cpp,
// stamp_avx512.cpp; fingerprint.cpp dispatches with OLMO_DISPATCH. Integer arithmetic only, so
// every ISA gives the same value. Cost: one 32-bit multiply, a mask, a shift and two 64-bit adds per
// vector of OLMO_SIMD_BYTES / 4 elements, plus the loads.
#pragma once
#include <stdint.h>

#include "kernels/simd.h"

#define OLMO_FINGERPRINT_BODY_DECLS \
  uint64_t fp_inner(const uint32_t* w, const uint32_t* b, int64_t n);

namespace olmo::ckpt {
OLMO_FOR_EACH_ISA(OLMO_FINGERPRINT_BODY_DECLS)

namespace OLMO_ISA_NS {

typedef uint64_t fp_u64v __attribute__((vector_size(OLMO_SIMD_BYTES)));
typedef uint32_t fp_u32v __attribute__((vector_size(OLMO_SIMD_BYTES)));
enum { kFpLanes = OLMO_SIMD_BYTES / 4 };

// sum_j uint32(w[j] * b[j])  as a 64-bit integer (no wrap for n < 2^32).
uint64_t fp_inner(const uint32_t* w, const uint32_t* b, int64_t n) {
  fp_u64v acc = {};
  int64_t j = 0;
  for (; j + kFpLanes <= n; j += kFpLanes) {
    fp_u32v x, bv;
    __builtin_memcpy(&x, w + j, sizeof x);
    __builtin_memcpy(&bv, b + j, sizeof bv);
    const fp_u64v t = (fp_u64v)(x * bv);  // two 32-bit terms per 64-bit lane
    acc += (t & 0xFFFFFFFFull) + (t >> 32);
  }
  uint64_t s = 0;
  for (int k = 0; k < kFpLanes / 2; ++k) s += acc[k];
  for (; j < n; ++j) s += uint64_t(uint32_t(w[j] * b[j]));
  return s;
}

}  // namespace OLMO_ISA_NS
}  // namespace olmo::ckpt
