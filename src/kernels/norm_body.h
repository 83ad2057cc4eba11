// Internal: the RMSNorm row kernels (contract in norm.h), written once over simd.h's Vec and
// stamped per ISA (norm.cpp: scalar; stamp_avx2.cpp, stamp_avx512.cpp). Each works on rows
// [n0, n1) on the calling thread; norm.cpp splits rows over threads and reduces dw.
// Sums of a row use two V16 accumulators (simd.h: 16 virtual lanes; 32-element blocks, the
// first 16 into a0, the next 16 into a1, a last partial block zero-filled into a0) closed by
// V16's fixed tree: the same bits on every ISA.
#pragma once
#include <stdint.h>

#include "kernels/simd.h"

#define OLMO_NORM_BODY_DECLS                                                                   \
  /* y = w * (x * rstd); rstd[n] = 1/sqrt(mean(x^2) + eps). */                                \
  void rmsnorm_fwd_rows(const float* x, const float* w, float* y, float* rstd, int64_t n0,     \
                        int64_t n1, int64_t D, float eps);                                     \
  /* dx overwritten, dw_part[D] += dy * x * rstd. */                                          \
  void rmsnorm_bwd_rows(const float* dy, const float* x, const float* w, const float* rstd,    \
                        float* dx, float* dw_part, int64_t n0, int64_t n1, int64_t D);     \
  /* dw[d] += part[0][d] + part[1][d] + ... (C partials of D floats, added in order), d0..d1. */ \
  void rmsnorm_dw_add(float* dw, const float* part, int64_t C, int64_t D, int64_t d0,         \
                      int64_t d1);

namespace olmo::kernels {
OLMO_FOR_EACH_ISA(OLMO_NORM_BODY_DECLS)

namespace OLMO_ISA_NS {

void rmsnorm_fwd_rows(const float* x, const float* w, float* y, float* rstd, int64_t n0,
                      int64_t n1, int64_t D, float eps) {
  constexpr int W = Vec::W;
  for (int64_t n = n0; n < n1; ++n) {
    const float* xr = x + n * D;
    V16 a0 = V16::zero(), a1 = V16::zero();
    int64_t d = 0;
    for (; d + 32 <= D; d += 32) {
      const V16 v0 = V16::load(xr + d), v1 = V16::load(xr + d + 16);
      a0 = V16::fmadd(v0, v0, a0);
      a1 = V16::fmadd(v1, v1, a1);
    }
    for (; d < D; d += 16) {
      const V16 v = D - d >= 16 ? V16::load(xr + d) : V16::load_fill(xr + d, D - d, 0.0f);
      a0 = V16::fmadd(v, v, a0);
    }
    const float ss = V16::hsum(V16::add(a0, a1));
    const float r = 1.0f / __builtin_sqrtf(ss / float(D) + eps);
    rstd[n] = r;
    const Vec::R vr = Vec::set1(r);
    float* yr = y + n * D;
    for (d = 0; d + W <= D; d += W)
      Vec::store(yr + d, Vec::mul(Vec::load(w + d), Vec::mul(Vec::load(xr + d), vr)));
    if (d < D)
      Vec::store_n(yr + d, Vec::mul(Vec::load_n(w + d, D - d), Vec::mul(Vec::load_n(xr + d, D - d), vr)),
                   D - d);
  }
}

void rmsnorm_bwd_rows(const float* dy, const float* x, const float* w, const float* rstd,
                      float* dx, float* dw_part, int64_t n0, int64_t n1, int64_t D) {
  constexpr int W = Vec::W;
  for (int64_t n = n0; n < n1; ++n) {
    const float* xr = x + n * D;
    const float* g = dy + n * D;
    const float r = rstd[n];
    V16 a0 = V16::zero(), a1 = V16::zero();  // sum_d w * dy * x
    int64_t d = 0;
    for (; d + 32 <= D; d += 32) {
      const V16 g0 = V16::mul(V16::load(w + d), V16::load(g + d));
      const V16 g1 = V16::mul(V16::load(w + d + 16), V16::load(g + d + 16));
      a0 = V16::fmadd(g0, V16::load(xr + d), a0);
      a1 = V16::fmadd(g1, V16::load(xr + d + 16), a1);
    }
    for (; d < D; d += 16) {
      const int64_t m = D - d;
      const V16 g0 = m >= 16 ? V16::mul(V16::load(w + d), V16::load(g + d))
                             : V16::mul(V16::load_fill(w + d, m, 0.0f), V16::load_fill(g + d, m, 0.0f));
      a0 = V16::fmadd(g0, m >= 16 ? V16::load(xr + d) : V16::load_fill(xr + d, m, 0.0f), a0);
    }
    const float dot = V16::hsum(V16::add(a0, a1));
    const Vec::R vc = Vec::set1(r * r * r * dot / float(D)), vr = Vec::set1(r);
    float* dxr = dx + n * D;
    for (int64_t d = 0; d < D; d += W) {
      const int64_t m = D - d;  // lanes left (>= W: a full vector)
      const Vec::R vx = Vec::load_n(xr + d, m), vg = Vec::load_n(g + d, m);
      const Vec::R vw = Vec::load_n(w + d, m), p = Vec::load_n(dw_part + d, m);
      // dx = r * (w*g) - c * x;  dw_part += g * (x * r)
      Vec::store_n(dxr + d, Vec::fmsub(vr, Vec::mul(vw, vg), Vec::mul(vc, vx)), m);
      Vec::store_n(dw_part + d, Vec::fmadd(vg, Vec::mul(vx, vr), p), m);
    }
  }
}

void rmsnorm_dw_add(float* dw, const float* part, int64_t C, int64_t D, int64_t d0,
                    int64_t d1) {
  constexpr int W = Vec::W;
  for (int64_t c = 0; c < C; ++c) {
    const float* pc = part + c * D;
    int64_t d = d0;
    for (; d + W <= d1; d += W) Vec::store(dw + d, Vec::add(Vec::load(dw + d), Vec::load(pc + d)));
    if (d < d1) Vec::store_n(dw + d, Vec::add(Vec::load_n(dw + d, d1 - d), Vec::load_n(pc + d, d1 - d)), d1 - d);
  }
}

}  // namespace OLMO_ISA_NS
}  // namespace olmo::kernels
