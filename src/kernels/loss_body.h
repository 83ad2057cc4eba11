// Internal: the per-row softmax pieces of the fused LM-head loss (loss.h), written once over
// simd.h's Vec and stamped per ISA (loss.cpp: scalar; stamp_avx2.cpp, stamp_avx512.cpp).
// Exponentials in base 2 (simd.h's vexp2): e^(z - c) = 2^(z log2e - c log2e); the row's sum and
// max through V16 and its log through vlog: the same bits on every ISA.
#pragma once
#include <math.h>
#include <stdint.h>

#include "kernels/simd.h"

#define OLMO_LOSS_BODY_DECLS                                                                   \
  /* log sum_v exp(z_v): pass 1 the max, pass 2 the sum of exponentials (~2 reads of z). */   \
  float loss_row_lse(const float* z, int64_t V);                                               \
  /* z_v <- a * exp(z_v - lse), in place. */                                                   \
  void loss_row_grad(float* z, int64_t V, float lse, float a);

namespace olmo::kernels {
OLMO_FOR_EACH_ISA(OLMO_LOSS_BODY_DECLS)

namespace OLMO_ISA_NS {

namespace {
// 2^(x c + nb) lane by lane.
inline V16 loss_e2(const V16& x, const V16& c, const V16& nb) {
  V16 y = V16::fmadd(x, c, nb);
#pragma GCC unroll 16
  for (int i = 0; i < V16::N; ++i) y.r[i] = vexp2(y.r[i]);
  return y;
}
}  // namespace

float loss_row_lse(const float* z, int64_t V) {
  constexpr float kLog2e = 1.4426950408889634f;
  // Two V16 accumulators over 32-element blocks, a last 16 (or partial, filled) into the first:
  // the same order on every ISA (simd.h's V16).
  V16 m0 = V16::set1(-INFINITY), m1 = m0;
  int64_t v = 0;
  for (; v + 32 <= V; v += 32) {
    m0 = V16::max(m0, V16::load(z + v));
    m1 = V16::max(m1, V16::load(z + v + 16));
  }
  for (; v < V; v += 16)
    m0 = V16::max(m0, V - v >= 16 ? V16::load(z + v) : V16::load_fill(z + v, V - v, -INFINITY));
  const float m = V16::hmax(V16::max(m0, m1));
  const float mb = m * kLog2e;
  const V16 c = V16::set1(kLog2e), nb = V16::set1(-mb);
  // 2^(z log2e - mb) per lane; filled tail lanes are -inf: 2^-inf = 0 adds nothing.
  V16 s0 = V16::zero(), s1 = s0;
  for (v = 0; v + 32 <= V; v += 32) {
    s0 = V16::add(s0, loss_e2(V16::load(z + v), c, nb));
    s1 = V16::add(s1, loss_e2(V16::load(z + v + 16), c, nb));
  }
  for (; v < V; v += 16)
    s0 = V16::add(s0, loss_e2(V - v >= 16 ? V16::load(z + v)
                                          : V16::load_fill(z + v, V - v, -INFINITY), c, nb));
  return m + vlog(V16::hsum(V16::add(s0, s1)));
}

// Lane-wise (no reduction): Vec with a masked tail.
void loss_row_grad(float* z, int64_t V, float lse, float a) {
  constexpr int W = Vec::W;
  constexpr float kLog2e = 1.4426950408889634f;
  const float lb = lse * kLog2e;
  const Vec::R c = Vec::set1(kLog2e), nb = Vec::set1(-lb), av = Vec::set1(a);
  for (int64_t v = 0; v < V; v += W)
    Vec::store_n(z + v, Vec::mul(av, vexp2(Vec::fmadd(Vec::load_n(z + v, V - v), c, nb))), V - v);
}

}  // namespace OLMO_ISA_NS
}  // namespace olmo::kernels
