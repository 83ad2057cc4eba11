// Fused, chunked LM head + cross-entropy + z-loss (contract in loss.h). Per chunk of valid rows:
// gather x rows, logits = x_c W^T (oneDNN gemm), per-row lse and in-place d/dlogits (the row
// kernels of loss_body.h, whose scalar copy is compiled here; OpenMP over rows),
// dx_c = dlogits W, dW += dlogits^T x_c. Sums are accumulated per row and reduced in row order
// (deterministic). Profiler: the gemms are timed by gemm(), the row work as "loss".
#include "kernels/loss.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/profile.h"
#include "core/scratch.h"
#include "kernels/dispatch.h"
#include "kernels/gemm.h"
#include "kernels/loss_body.h"

namespace olmo::kernels {
float lm_row_lse(const float* z, int64_t V) { return OLMO_DISPATCH(loss_row_lse)(z, V); }
void lm_row_grad(float* z, int64_t V, float lse, float a) {
  OLMO_DISPATCH(loss_row_grad)(z, V, lse, a);
}

LossSums lm_head_loss(const float* x, const float* W, const int32_t* targets, int64_t N, int64_t D,
                      int64_t V, float z_coef, float grad_scale, float* dx, float* dW,
                      int64_t chunk_rows) {
  OLMO_CHECK(N >= 0 && D > 0 && V > 0, "lm_head_loss: bad shape N=", N, " D=", D, " V=", V);
  std::vector<int64_t> rows;  // valid rows, in order
  rows.reserve(N);
  for (int64_t i = 0; i < N; ++i) {
    OLMO_CHECK(targets[i] == kIgnoreIndex || (targets[i] >= 0 && targets[i] < V),
               "lm_head_loss: target[", i, "] = ", targets[i], " is outside [0, ", V, ")");
    if (targets[i] != kIgnoreIndex) rows.push_back(i);
  }
  if (dx) std::fill(dx, dx + N * D, 0.0f);
  // Auto: the largest multiple of 16 rows whose [rows, V] logits tile fits in 64 MB (V = 100352:
  // 160 rows), within [16, 256]. Larger chunks help the gemms (M = rows) but cost memory.
  if (chunk_rows <= 0)
    chunk_rows = std::clamp<int64_t>((int64_t(64) << 20) / (4 * V) / 16 * 16, 16, 256);
  const int64_t nvalid = int64_t(rows.size());
  const int64_t C = std::max<int64_t>(1, std::min(chunk_rows, nvalid));
  const bool grad = dx || dW;
  const auto row_lse = OLMO_DISPATCH(loss_row_lse);
  const auto row_grad = OLMO_DISPATCH(loss_row_grad);

  // Tiles in this thread's scratch (core/scratch.h): allocated and page-faulted once per run.
  float* xc = scratch<float>(Scratch::loss_x, C * D);
  float* logits = scratch<float>(Scratch::loss_logits, C * V);
  float* dxc = dx ? scratch<float>(Scratch::loss_dx, C * D) : nullptr;
  double* ce = scratch<double>(Scratch::loss_ce, C);
  double* lz = scratch<double>(Scratch::loss_lz, C);
  LossSums r;
  for (int64_t c0 = 0; c0 < nvalid; c0 += C) {
    const int64_t c = std::min(C, nvalid - c0);
    for (int64_t r0 = 0; r0 < c; ++r0)
      std::copy(x + rows[c0 + r0] * D, x + rows[c0 + r0] * D + D, xc + r0 * D);
    gemm(false, true, c, V, D, 1.0f, xc, W, 0.0f, logits);
    {
      OLMO_PROFILE("loss", 0);
#pragma omp parallel for schedule(static)
      for (int64_t r0 = 0; r0 < c; ++r0) {
        float* z = logits + r0 * V;
        const int32_t t = targets[rows[c0 + r0]];
        const float lse = row_lse(z, V);
        ce[r0] = double(lse) - double(z[t]);
        lz[r0] = double(lse) * double(lse);
        if (grad) {
          row_grad(z, V, lse, grad_scale * (1.0f + 2.0f * z_coef * lse));
          z[t] -= grad_scale;
        }
      }
    }
    for (int64_t r0 = 0; r0 < c; ++r0) r.ce_sum += ce[r0], r.z_sum += lz[r0];
    r.count += c;
    if (dx) {
      gemm(false, false, c, D, V, 1.0f, logits, W, 0.0f, dxc);
      for (int64_t r0 = 0; r0 < c; ++r0)
        std::copy(dxc + r0 * D, dxc + r0 * D + D, dx + rows[c0 + r0] * D);
    }
    if (dW) gemm(true, false, V, D, c, 1.0f, logits, xc, 1.0f, dW);
  }
  return r;
}

}  // namespace olmo::kernels
