// Internal: the tile geometry and mask helpers shared by the tiled attention kernels (fp32:
// attention_body.h, stamped per ISA; bf16: attention_bf16_avx512bf16.cpp). Everything has
// internal linkage inside OLMO_ISA_NS (simd.h), so each translation unit gets its own copy and
// no copy compiled with wider ISA flags can be picked by the linker for a baseline one. Scalar
// code only (the element masks touch one tile edge per tile pair).
#pragma once
#include <math.h>
#include <stdint.h>

#include "kernels/simd.h"

namespace olmo::kernels {
namespace OLMO_ISA_NS {
namespace {

// 64 x 64 measured best among {32, 48, 64, 96}^2 at hd 64 (forward and backward).
constexpr int64_t kBr = 64;  // query rows per tile (multiple of every vector width)
constexpr int64_t kBc = 64;  // keys per tile (multiple of every vector width)

inline int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }
inline int64_t round_up(int64_t a, int64_t m) { return (a + m - 1) / m * m; }

// Causal/window relation of query rows [i0, i1) and keys [j0, j1): 0 none visible, 1 all
// visible, 2 mixed (needs the element mask).
inline int classify_window(int64_t i0, int64_t i1, int64_t j0, int64_t j1, int64_t w) {
  if (j0 > i1 - 1) return 0;
  if (w > 0 && i0 - (j1 - 1) >= w) return 0;
  if (j1 - 1 <= i0 && (w <= 0 || (i1 - 1) - j0 < w)) return 1;
  return 2;
}

// Document relation of the same tiles (keys clipped to T): 0 disjoint, 1 one shared document,
// 2 mixed.
inline int classify_docs(const int32_t* doc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  if (!doc) return 1;
  int32_t qmin = doc[i0], qmax = doc[i0], kmin = doc[j0], kmax = doc[j0];
  for (int64_t i = i0; i < i1; ++i) qmin = doc[i] < qmin ? doc[i] : qmin, qmax = doc[i] > qmax ? doc[i] : qmax;
  for (int64_t j = j0; j < j1; ++j) kmin = doc[j] < kmin ? doc[j] : kmin, kmax = doc[j] > kmax ? doc[j] : kmax;
  if (kmax < qmin || kmin > qmax) return 0;
  if (qmin == qmax && kmin == kmax && qmin == kmin) return 1;
  return 2;
}

// Set S[r, c] = -inf where key j0 + c is hidden from query i0 + r (rows < rows, kBc columns).
// The causal/window part is a contiguous visible range per row, so two constant fills.
void apply_mask(float* S, int64_t rows, int64_t i0, int64_t j0, int64_t w, const int32_t* doc,
                bool doc_mixed) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = i0 + r;
    const int64_t lo = (w > 0 ? imax(j0, i - w + 1) : j0) - j0, hi = imin(j0 + kBc - 1, i) - j0;
    float* s = S + r * kBc;
    for (int64_t c = 0; c < lo && c < kBc; ++c) s[c] = -INFINITY;
    for (int64_t c = hi + 1 > 0 ? hi + 1 : 0; c < kBc; ++c) s[c] = -INFINITY;
    if (doc_mixed)
      for (int64_t c = lo; c <= hi; ++c)
        if (doc[j0 + c] != doc[i]) s[c] = -INFINITY;
  }
}

// Transposed tile mask: S^T[r, c] = -inf where key j0 + r is hidden from query i0 + c
// (kr key rows, kBr query columns; columns >= rows are padding and left alone for docs).
void apply_mask_t(float* St, int64_t kr, int64_t rows, int64_t i0, int64_t j0, int64_t w,
                  const int32_t* doc, bool doc_mixed) {
  for (int64_t r = 0; r < kr; ++r) {
    const int64_t j = j0 + r;
    const int64_t lo = imax(0, j - i0), hi = w > 0 ? imin(kBr - 1, j + w - 1 - i0) : kBr - 1;
    float* s = St + r * kBr;
    for (int64_t c = 0; c < lo && c < kBr; ++c) s[c] = -INFINITY;
    for (int64_t c = hi + 1 > 0 ? hi + 1 : 0; c < kBr; ++c) s[c] = -INFINITY;
    if (doc_mixed)
      for (int64_t c = lo; c <= hi && c < rows; ++c)
        if (doc[i0 + c] != doc[j]) s[c] = -INFINITY;
  }
}

}  // namespace
}  // namespace OLMO_ISA_NS
}  // namespace olmo::kernels
