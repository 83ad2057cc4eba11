// Internal: the SwiGLU kernels (contract in swiglu.h) over [i0, i1), written once over simd.h's
// Vec and stamped per ISA (swiglu.cpp: scalar; stamp_avx2.cpp, stamp_avx512.cpp). e^x is simd.h's
// vexp (one Cephes polynomial on every ISA); the divisions are exact: the same bits everywhere.
#pragma once
#include <stdint.h>

#include "kernels/simd.h"

#define OLMO_SWIGLU_BODY_DECLS                                                                 \
  void swiglu_fwd(const float* gate, const float* up, float* out, int64_t i0, int64_t i1);    \
  void swiglu_bwd(const float* gate, const float* up, const float* dout, float* dgate,        \
                  float* dup, int64_t i0, int64_t i1);

namespace olmo::kernels {
OLMO_FOR_EACH_ISA(OLMO_SWIGLU_BODY_DECLS)

namespace OLMO_ISA_NS {

// out = g / (1 + e^-g) * u
void swiglu_fwd(const float* gate, const float* up, float* out, int64_t i0, int64_t i1) {
  constexpr int W = Vec::W;
  const Vec::R one = Vec::set1(1.0f);
  for (int64_t i = i0; i < i1; i += W) {
    const int64_t m = i1 - i;
    const Vec::R g = Vec::load_n(gate + i, m), u = Vec::load_n(up + i, m);
    const Vec::R e = vexp(Vec::sub(Vec::zero(), g));
    Vec::store_n(out + i, Vec::mul(Vec::div(g, Vec::add(one, e)), u), m);
  }
}

// s = 1 / (1 + e^-g); dup = dout * (g * s); dgate = (dout * up) * (s * (1 + g * (1 - s)))
void swiglu_bwd(const float* gate, const float* up, const float* dout, float* dgate,
                float* dup, int64_t i0, int64_t i1) {
  constexpr int W = Vec::W;
  const Vec::R one = Vec::set1(1.0f);
  for (int64_t i = i0; i < i1; i += W) {
    const int64_t m = i1 - i;
    const Vec::R g = Vec::load_n(gate + i, m), u = Vec::load_n(up + i, m);
    const Vec::R d = Vec::load_n(dout + i, m);
    const Vec::R e = vexp(Vec::sub(Vec::zero(), g));
    const Vec::R s = Vec::div(one, Vec::add(one, e));
    Vec::store_n(dup + i, Vec::mul(d, Vec::mul(g, s)), m);
    const Vec::R ds = Vec::mul(s, Vec::fmadd(g, Vec::sub(one, s), one));
    Vec::store_n(dgate + i, Vec::mul(Vec::mul(d, u), ds), m);
  }
}

}  // namespace OLMO_ISA_NS
}  // namespace olmo::kernels
