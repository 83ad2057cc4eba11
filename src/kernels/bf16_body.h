// Internal: the fp32 <-> bf16 conversion loops behind bf16.h over [i0, i1), written once and
// stamped per ISA (bf16.cpp: scalar; stamp_avx2.cpp, stamp_avx512.cpp). The body is bf16.h's
// integer round-to-nearest-even formula as a branch-free loop that GCC vectorises at -O3 for
// the ISA it is stamped for, so every copy gives the scalar reference's bits.
// Cost: memory-bound, 6 bytes per element.
#pragma once
#include <stdint.h>
#include <string.h>

#include "kernels/simd.h"

#define OLMO_BF16_BODY_DECLS                                                 \
  void cvt_to_bf16(const float* x, uint16_t* y, int64_t i0, int64_t i1);    \
  void cvt_to_f32(const uint16_t* x, float* y, int64_t i0, int64_t i1);

namespace olmo::kernels {
OLMO_FOR_EACH_ISA(OLMO_BF16_BODY_DECLS)

namespace OLMO_ISA_NS {

// y[i] = bf16(x[i]): (bits + 0x7fff + lsb) >> 16, NaN -> 0x7fc0.
void cvt_to_bf16(const float* x, uint16_t* y, int64_t i0, int64_t i1) {
#pragma GCC ivdep
  for (int64_t i = i0; i < i1; ++i) {
    uint32_t u;
    memcpy(&u, x + i, 4);
    const uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    y[i] = (u & 0x7fffffffu) > 0x7f800000u ? uint16_t(0x7fc0) : uint16_t(r);
  }
}

// y[i] = float(x[i]): exact (a shift).
void cvt_to_f32(const uint16_t* x, float* y, int64_t i0, int64_t i1) {
#pragma GCC ivdep
  for (int64_t i = i0; i < i1; ++i) {
    const uint32_t u = uint32_t(x[i]) << 16;
    memcpy(y + i, &u, 4);
  }
}

}  // namespace OLMO_ISA_NS
}  // namespace olmo::kernels
