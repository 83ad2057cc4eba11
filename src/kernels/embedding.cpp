// Token embedding forward (row gather) and backward (deterministic scatter-add split by columns;
// the scatter-add is embedding_body.h, its scalar copy compiled here).
#include "kernels/embedding.h"

#include <cstring>

#include "core/error.h"
#include "core/profile.h"
#include "kernels/dispatch.h"
#include "kernels/embedding_body.h"

namespace olmo::kernels {

namespace {
void check_ids(const int32_t* ids, int64_t N, int64_t V, const char* what) {
  for (int64_t n = 0; n < N; ++n)
    OLMO_CHECK(ids[n] >= 0 && ids[n] < V, what, ": token id ", ids[n], " at position ", n,
               " is outside the vocabulary [0, ", V, ")");
}
}  // namespace

void embedding_forward(const float* W, const int32_t* ids, int64_t N, int64_t D, float* out,
                       int64_t V) {
  check_ids(ids, N, V, "embedding_forward");
  OLMO_PROFILE("embedding", 0);
  int64_t grain = D > 0 ? (16384 + D - 1) / D : N;
  parallel_blocks(N, grain, 1, [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n)
      std::memcpy(out + n * D, W + int64_t(ids[n]) * D, size_t(D) * sizeof(float));
  });
}

void embedding_backward(const float* dout, const int32_t* ids, int64_t N, int64_t D, float* dW,
                        int64_t V) {
  check_ids(ids, N, V, "embedding_backward");
  OLMO_PROFILE("embedding", 0);
  auto scatter = OLMO_DISPATCH(embedding_scatter_cols);
  // Each thread owns a column slice [d0, d1) of every row and walks the tokens in order, so
  // repeated ids never race and the summation order is fixed.
  const int64_t work = N * D;
  int64_t cols_grain = work > 0 ? (D * 16384 + work - 1) / work : D;
  parallel_blocks(D, cols_grain < 16 ? 16 : cols_grain, 16, [&](int64_t d0, int64_t d1) {
    scatter(dW, dout, ids, N, D, d0, d1);
  });
}

}  // namespace olmo::kernels
