// Internal: the embedding backward's scatter-add (contract in embedding.h) for one column slice,
// written once over simd.h's Vec and stamped per ISA (embedding.cpp: scalar; stamp_avx2.cpp,
// stamp_avx512.cpp).
#pragma once
#include <stdint.h>

#include "kernels/simd.h"

#define OLMO_EMBEDDING_BODY_DECLS                                                              \
  /* dW[ids[n], d0..d1) += dout[n, d0..d1) for n = 0 .. N-1, in order. */                     \
  void embedding_scatter_cols(float* dW, const float* dout, const int32_t* ids, int64_t N,    \
                              int64_t D, int64_t d0, int64_t d1);

namespace olmo::kernels {
OLMO_FOR_EACH_ISA(OLMO_EMBEDDING_BODY_DECLS)

namespace OLMO_ISA_NS {

void embedding_scatter_cols(float* dW, const float* dout, const int32_t* ids, int64_t N,
                            int64_t D, int64_t d0, int64_t d1) {
  constexpr int W = Vec::W;
  for (int64_t n = 0; n < N; ++n) {
    float* y = dW + int64_t(ids[n]) * D;
    const float* x = dout + n * D;
    int64_t d = d0;
    for (; d + W <= d1; d += W) Vec::store(y + d, Vec::add(Vec::load(y + d), Vec::load(x + d)));
    if (d < d1) Vec::store_n(y + d, Vec::add(Vec::load_n(y + d, d1 - d), Vec::load_n(x + d, d1 - d)), d1 - d);
  }
}

}  // namespace OLMO_ISA_NS
}  // namespace olmo::kernels
