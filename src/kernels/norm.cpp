// RMSNorm public entry points: threading, deterministic dw reduction, ISA dispatch. The row
// kernels are norm_body.h (its scalar copy is compiled here).
#include "kernels/norm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/profile.h"
#include "kernels/dispatch.h"
#include "kernels/norm_body.h"

namespace olmo::kernels {

void rmsnorm_forward(const float* x, const float* w, float* y, float* rstd, int64_t N, int64_t D,
                     float eps) {
  OLMO_PROFILE("norm", 0);
  auto fn = OLMO_DISPATCH(rmsnorm_fwd_rows);
  // ~16K floats of work per thread at least.
  int64_t grain = D > 0 ? (16384 + D - 1) / D : N;
  parallel_blocks(N, grain, 1, [&](int64_t n0, int64_t n1) {
    fn(x, w, y, rstd, n0, n1, D, eps);
  });
}

void rmsnorm_backward(const float* dy, const float* x, const float* w, const float* rstd,
                      float* dx, float* dw, int64_t N, int64_t D) {
  if (N <= 0 || D <= 0) return;
  OLMO_PROFILE("norm", 0);
  auto fn = OLMO_DISPATCH(rmsnorm_bwd_rows);
  auto add = OLMO_DISPATCH(rmsnorm_dw_add);
  // Chunking depends on N only: C chunks of consecutive rows, each with its own dw partial.
  const int64_t C = std::max<int64_t>(1, std::min<int64_t>(32, N / 32));
  std::vector<float> part(size_t(C * D), 0.0f);
#pragma omp parallel for schedule(static) if (C > 1 && !omp_in_parallel())
  for (int64_t c = 0; c < C; ++c) {
    int64_t n0 = N * c / C, n1 = N * (c + 1) / C;
    fn(dy, x, w, rstd, dx, part.data() + c * D, n0, n1, D);
  }
  // dw += part[0] + part[1] + ... in chunk order, split over columns.
  parallel_blocks(D, 4096 / C + 1, 16, [&](int64_t d0, int64_t d1) {
    add(dw, part.data(), C, D, d0, d1);
  });
}

}  // namespace olmo::kernels
