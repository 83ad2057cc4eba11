// Internal: the RoPE rotation of the heads of one token (contract in rope.h), written once over
// simd.h's Vec and stamped per ISA (rope.cpp: scalar; stamp_avx2.cpp, stamp_avx512.cpp).
// Written as separate multiplies, then add/sub, like torch's q*cos + rotate_half(q)*sin, and
// rounded so on every ISA (-ffp-contract=off: no fusing). Tail lanes (hd/2 not a multiple of W)
// are masked.
#pragma once
#include <stdint.h>

#include "kernels/simd.h"

#define OLMO_ROPE_BODY_DECLS                                                                   \
  /* `heads` head-vectors of width hd at x (stride hd), all at one position: cs/sn are that   \
     position's cos/sin rows [hd/2]. sign = +1 forward, -1 transpose (backward). */           \
  void rope_heads(float* x, int64_t heads, int64_t hd, const float* cs, const float* sn,      \
                  float sign);

namespace olmo::kernels {
OLMO_FOR_EACH_ISA(OLMO_ROPE_BODY_DECLS)

namespace OLMO_ISA_NS {

void rope_heads(float* x, int64_t heads, int64_t hd, const float* cs, const float* sn,
                float sign) {
  constexpr int W = Vec::W;
  const int64_t half = hd / 2;
  const Vec::R vsign = Vec::set1(sign);
  for (int64_t h = 0; h < heads; ++h) {
    float* v = x + h * hd;
    for (int64_t j = 0; j < half; j += W) {
      const int64_t m = half - j;
      const Vec::R c = Vec::load_n(cs + j, m), s = Vec::mul(vsign, Vec::load_n(sn + j, m));
      const Vec::R x1 = Vec::load_n(v + j, m), x2 = Vec::load_n(v + j + half, m);
      Vec::store_n(v + j, Vec::sub(Vec::mul(x1, c), Vec::mul(x2, s)), m);
      Vec::store_n(v + j + half, Vec::add(Vec::mul(x2, c), Vec::mul(x1, s)), m);
    }
  }
}

}  // namespace OLMO_ISA_NS
}  // namespace olmo::kernels
