// Internal: the LM-head row kernels (see loss_rows.h) written once over softmax_simd.h's Vec and
// compiled once per ISA: loss.cpp (scalar), loss_avx2.cpp, loss_avx512.cpp each include this file
// and wrap the two functions in their row_kernels_<isa>() factory. Internal linkage only.
#pragma once
#include <math.h>
#include <stdint.h>

#include "kernels/softmax_simd.h"

namespace {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// log sum_v exp(z_v): pass 1 max, pass 2 sum of exp2(z*log2e - max*log2e). Cost ~2 reads of z.
float loss_row_lse(const float* z, int64_t V) {
  constexpr int W = Vec::W;
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
    s0 = Vec::add(s0, Vec::exp2(Vec::fmadd(Vec::load(z + v), c, nb)));
    s1 = Vec::add(s1, Vec::exp2(Vec::fmadd(Vec::load(z + v + W), c, nb)));
    s2 = Vec::add(s2, Vec::exp2(Vec::fmadd(Vec::load(z + v + 2 * W), c, nb)));
    s3 = Vec::add(s3, Vec::exp2(Vec::fmadd(Vec::load(z + v + 3 * W), c, nb)));
  }
  float s = Vec::hsum(Vec::add(Vec::add(s0, s1), Vec::add(s2, s3)));
  for (int64_t v = Vv; v < V; ++v) s += exp2f(z[v] * kLog2e - mb);
  return m + logf(s);
}

// z_v <- a * exp(z_v - lse), in place.
void loss_row_grad(float* z, int64_t V, float lse, float a) {
  constexpr int W = Vec::W;
  const int64_t Vv = V / W * W;
  const float lb = lse * kLog2e;
  const Vec::R c = Vec::set1(kLog2e), nb = Vec::set1(-lb), av = Vec::set1(a);
  for (int64_t v = 0; v < Vv; v += W)
    Vec::store(z + v, Vec::mul(av, Vec::exp2(Vec::fmadd(Vec::load(z + v), c, nb))));
  for (int64_t v = Vv; v < V; ++v) z[v] = a * exp2f(z[v] * kLog2e - lb);
}

}  // namespace
