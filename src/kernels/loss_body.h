// Internal: the per-row softmax pieces of the fused LM-head loss (loss.h), written once over
// simd.h's Vec and stamped per ISA (loss.cpp: scalar; stamp_avx2.cpp, stamp_avx512.cpp).
// Exponentials in base 2 (simd.h's vexp2): e^(z - c) = 2^(z log2e - c log2e).
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

float loss_row_lse(const float* z, int64_t V) {
  constexpr int W = Vec::W;
  constexpr float kLog2e = 1.4426950408889634f;
  const int64_t Vv = V / (4 * W) * (4 * W);
  Vec::R m0 = Vec::set1(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
  for (int64_t v = 0; v < Vv; v += 4 * W) {
    m0 = Vec::max(m0, Vec::load(z + v));
    m1 = Vec::max(m1, Vec::load(z + v + W));
    m2 = Vec::max(m2, Vec::load(z + v + 2 * W));
    m3 = Vec::max(m3, Vec::load(z + v + 3 * W));
  }
  float m = Vec::hmax(Vec::max(Vec::max(m0, m1), Vec::max(m2, m3)));
  for (int64_t v = Vv; v < V; ++v) m = z[v] > m ? z[v] : m;
  const float mb = m * kLog2e;
  const Vec::R c = Vec::set1(kLog2e), nb = Vec::set1(-mb);
  Vec::R s0 = Vec::zero(), s1 = s0, s2 = s0, s3 = s0;
  for (int64_t v = 0; v < Vv; v += 4 * W) {
    s0 = Vec::add(s0, vexp2(Vec::fmadd(Vec::load(z + v), c, nb)));
    s1 = Vec::add(s1, vexp2(Vec::fmadd(Vec::load(z + v + W), c, nb)));
    s2 = Vec::add(s2, vexp2(Vec::fmadd(Vec::load(z + v + 2 * W), c, nb)));
    s3 = Vec::add(s3, vexp2(Vec::fmadd(Vec::load(z + v + 3 * W), c, nb)));
  }
  float s = Vec::hsum(Vec::add(Vec::add(s0, s1), Vec::add(s2, s3)));
  for (int64_t v = Vv; v < V; ++v) s += exp2f(z[v] * kLog2e - mb);
  return m + logf(s);
}

void loss_row_grad(float* z, int64_t V, float lse, float a) {
  constexpr int W = Vec::W;
  constexpr float kLog2e = 1.4426950408889634f;
  const int64_t Vv = V / W * W;
  const float lb = lse * kLog2e;
  const Vec::R c = Vec::set1(kLog2e), nb = Vec::set1(-lb), av = Vec::set1(a);
  for (int64_t v = 0; v < Vv; v += W)
    Vec::store(z + v, Vec::mul(av, vexp2(Vec::fmadd(Vec::load(z + v), c, nb))));
  for (int64_t v = Vv; v < V; ++v) z[v] = a * exp2f(z[v] * kLog2e - lb);
}

}  // namespace OLMO_ISA_NS
}  // namespace olmo::kernels
