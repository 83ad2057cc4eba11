// RMSNorm public entry points (threading, deterministic dw reduction, ISA dispatch) and the
// scalar per-row kernels. Vector kernels: norm_avx2.cpp, norm_avx512.cpp.
#include "kernels/norm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/vec_dispatch.h"
#include "kernels/vec_kernels.h"

namespace olmo::kernels {

namespace isa_scalar {
void rmsnorm_fwd_rows(const float* x, const float* w, float* y, float* rstd, int64_t n0,
                      int64_t n1, int64_t D, float eps) {
  for (int64_t n = n0; n < n1; ++n) {
    const float* xr = x + n * D;
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t d = 0;
    for (; d + 8 <= D; d += 8)
      for (int k = 0; k < 8; ++k) acc[k] += xr[d + k] * xr[d + k];
    for (int k = 0; d < D; ++d, ++k) acc[k] += xr[d] * xr[d];
    float ss = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    float r = 1.0f / std::sqrt(ss / float(D) + eps);
    rstd[n] = r;
    float* yr = y + n * D;
    for (d = 0; d < D; ++d) yr[d] = w[d] * (xr[d] * r);
  }
}

void rmsnorm_bwd_rows(const float* dy, const float* x, const float* w, const float* rstd,
                      float* dx, float* dw_part, int64_t n0, int64_t n1, int64_t D) {
  for (int64_t n = n0; n < n1; ++n) {
    const float* xr = x + n * D;
    const float* g = dy + n * D;
    float r = rstd[n];
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t d = 0;
    for (; d + 8 <= D; d += 8)
      for (int k = 0; k < 8; ++k) acc[k] += w[d + k] * g[d + k] * xr[d + k];
    for (int k = 0; d < D; ++d, ++k) acc[k] += w[d] * g[d] * xr[d];
    float dot = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    float c = r * r * r * dot / float(D);
    float* dxr = dx + n * D;
    for (d = 0; d < D; ++d) {
      dxr[d] = r * (w[d] * g[d]) - c * xr[d];
      dw_part[d] += g[d] * (xr[d] * r);
    }
  }
}
}  // namespace isa_scalar

void rmsnorm_forward(const float* x, const float* w, float* y, float* rstd, int64_t N, int64_t D,
                     float eps) {
  auto fn = detail::pick(isa_scalar::rmsnorm_fwd_rows, isa_avx2::rmsnorm_fwd_rows,
                         isa_avx512::rmsnorm_fwd_rows);
  // ~16K floats of work per thread at least.
  int64_t grain = D > 0 ? (16384 + D - 1) / D : N;
  detail::parallel_blocks(N, grain, 1, [&](int64_t n0, int64_t n1) {
    fn(x, w, y, rstd, n0, n1, D, eps);
  });
}

void rmsnorm_backward(const float* dy, const float* x, const float* w, const float* rstd,
                      float* dx, float* dw, int64_t N, int64_t D) {
  if (N <= 0 || D <= 0) return;
  auto fn = detail::pick(isa_scalar::rmsnorm_bwd_rows, isa_avx2::rmsnorm_bwd_rows,
                         isa_avx512::rmsnorm_bwd_rows);
  auto add = detail::pick(isa_scalar::add_inplace, isa_avx2::add_inplace,
                          isa_avx512::add_inplace);
  // Chunking depends on N only: C chunks of consecutive rows, each with its own dw partial.
  const int64_t C = std::max<int64_t>(1, std::min<int64_t>(32, N / 32));
  std::vector<float> part(size_t(C * D), 0.0f);
#pragma omp parallel for schedule(static) if (C > 1 && !omp_in_parallel())
  for (int64_t c = 0; c < C; ++c) {
    int64_t n0 = N * c / C, n1 = N * (c + 1) / C;
    fn(dy, x, w, rstd, dx, part.data() + c * D, n0, n1, D);
  }
  // dw += part[0] + part[1] + ... in chunk order, split over columns.
  detail::parallel_blocks(D, 4096 / C + 1, 16, [&](int64_t d0, int64_t d1) {
    for (int64_t c = 0; c < C; ++c) add(dw, part.data() + c * D, d0, d1);
  });
}

}  // namespace olmo::kernels
