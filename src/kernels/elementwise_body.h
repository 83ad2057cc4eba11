// Internal: the flat fp32 elementwise kernels (contract in elementwise.h) over [i0, i1), written
// once over simd.h's Vec and stamped per ISA (elementwise.cpp: scalar; stamp_avx2.cpp,
// stamp_avx512.cpp). Full vectors, then one masked tail.
#pragma once
#include <stdint.h>

#include "kernels/simd.h"

#define OLMO_ELEMENTWISE_BODY_DECLS                                                            \
  void add_inplace(float* y, const float* x, int64_t i0, int64_t i1);                         \
  void add(float* out, const float* a, const float* b, int64_t i0, int64_t i1);               \
  void axpy(float* y, float a, const float* x, int64_t i0, int64_t i1);                        \
  void scale_inplace(float* y, float a, int64_t i0, int64_t i1);                               \
  /* sum of squares in 16 double lanes, fixed tree (ISA-invariant). */                        \
  double sum_squares(const float* x, int64_t i0, int64_t i1);

namespace olmo::kernels {
OLMO_FOR_EACH_ISA(OLMO_ELEMENTWISE_BODY_DECLS)

namespace OLMO_ISA_NS {

void add_inplace(float* y, const float* x, int64_t i0, int64_t i1) {
  constexpr int W = Vec::W;
  int64_t i = i0;
  for (; i + W <= i1; i += W) Vec::store(y + i, Vec::add(Vec::load(y + i), Vec::load(x + i)));
  if (i < i1) Vec::store_n(y + i, Vec::add(Vec::load_n(y + i, i1 - i), Vec::load_n(x + i, i1 - i)), i1 - i);
}

void add(float* out, const float* a, const float* b, int64_t i0, int64_t i1) {
  constexpr int W = Vec::W;
  int64_t i = i0;
  for (; i + W <= i1; i += W) Vec::store(out + i, Vec::add(Vec::load(a + i), Vec::load(b + i)));
  if (i < i1) Vec::store_n(out + i, Vec::add(Vec::load_n(a + i, i1 - i), Vec::load_n(b + i, i1 - i)), i1 - i);
}

// y += a * x (one rounding on the FMA ISAs)
void axpy(float* y, float a, const float* x, int64_t i0, int64_t i1) {
  constexpr int W = Vec::W;
  const Vec::R va = Vec::set1(a);
  int64_t i = i0;
  for (; i + W <= i1; i += W) Vec::store(y + i, Vec::fmadd(va, Vec::load(x + i), Vec::load(y + i)));
  if (i < i1)
    Vec::store_n(y + i, Vec::fmadd(va, Vec::load_n(x + i, i1 - i), Vec::load_n(y + i, i1 - i)), i1 - i);
}

void scale_inplace(float* y, float a, int64_t i0, int64_t i1) {
  constexpr int W = Vec::W;
  const Vec::R va = Vec::set1(a);
  int64_t i = i0;
  for (; i + W <= i1; i += W) Vec::store(y + i, Vec::mul(va, Vec::load(y + i)));
  if (i < i1) Vec::store_n(y + i, Vec::mul(va, Vec::load_n(y + i, i1 - i)), i1 - i);
}

// 16 lanes of double (element i0 + i into lane i % 16; the products of two floats are exact in
// double), closed by V16's tree: the same bits on every ISA. The compiler vectorises the lanes.
double sum_squares(const float* x, int64_t i0, int64_t i1) {
  double a[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = i0;
  for (; i + 16 <= i1; i += 16)
#pragma GCC unroll 16
    for (int l = 0; l < 16; ++l) a[l] += double(x[i + l]) * double(x[i + l]);
  for (int l = 0; i + l < i1; ++l) a[l] += double(x[i + l]) * double(x[i + l]);
  for (int w = 8; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) a[l] = a[l] + a[l + w];
  return a[0];
}

}  // namespace OLMO_ISA_NS
}  // namespace olmo::kernels
