// Token embedding lookup and its gradient.
//   forward:  out[n, :] = W[ids[n], :]                     W [V, D], ids [N], out [N, D]
//   backward: dW[ids[n], :] += dout[n, :]  (accumulates)   dout [N, D], dW [V, D]
// Every id must satisfy 0 <= id < V, otherwise olmo::Error (naming the position and the id).
// Cost: forward copies N rows; backward reads dout once. Threads: OpenMP; the backward splits
// the D columns between threads and each thread adds the rows in token order, so the result is
// deterministic (same bits for any thread count) and race-free when ids repeat.
#pragma once
#include <cstdint>

namespace olmo::kernels {

void embedding_forward(const float* W, const int32_t* ids, int64_t N, int64_t D, float* out,
                       int64_t V);
void embedding_backward(const float* dout, const int32_t* ids, int64_t N, int64_t D, float* dW,
                        int64_t V);

template <class T>
void embedding_forward_ref(const T* W, const int32_t* ids, int64_t N, int64_t D, T* out) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t d = 0; d < D; ++d) out[n * D + d] = W[int64_t(ids[n]) * D + d];
}

template <class T>
void embedding_backward_ref(const T* dout, const int32_t* ids, int64_t N, int64_t D, T* dW) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t d = 0; d < D; ++d) dW[int64_t(ids[n]) * D + d] += dout[n * D + d];
}

}  // namespace olmo::kernels
