// lm_head_loss_bf16 (contract in loss_bf16.h): loss.cpp's chunk loop with bf16 GEMM inputs.
#include "kernels/loss_bf16.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/profile.h"
#include "core/scratch.h"
#include "kernels/gemm.h"

namespace olmo::kernels {

LossSums lm_head_loss_bf16(const float* x, const bf16_t* W, const int32_t* targets, int64_t N,
                           int64_t D, int64_t V, float z_coef, float grad_scale, float* dx,
                           float* dW, int64_t chunk_rows) {
  OLMO_CHECK(N >= 0 && D > 0 && V > 0, "lm_head_loss_bf16: bad shape N=", N, " D=", D, " V=", V);
  std::vector<int64_t> rows;  // valid rows, in order
  rows.reserve(size_t(N));
  for (int64_t i = 0; i < N; ++i) {
    OLMO_CHECK(targets[i] == kIgnoreIndex || (targets[i] >= 0 && targets[i] < V),
               "lm_head_loss_bf16: target[", i, "] = ", targets[i], " is outside [0, ", V, ")");
    if (targets[i] != kIgnoreIndex) rows.push_back(i);
  }
  if (dx) std::fill(dx, dx + N * D, 0.0f);
  if (chunk_rows <= 0)  // as lm_head_loss: the fp32 logits tile <= 64 MB, 16..256 rows
    chunk_rows = std::clamp<int64_t>((int64_t(64) << 20) / (4 * V) / 16 * 16, 16, 256);
  const int64_t nvalid = int64_t(rows.size());
  const int64_t C = std::max<int64_t>(1, std::min(chunk_rows, nvalid));
  const bool grad = dx || dW;

  // Tiles in this thread's scratch (core/scratch.h): allocated and page-faulted once per run.
  float* xc = scratch<float>(Scratch::loss_x, C * D);
  float* logits = scratch<float>(Scratch::loss_logits, C * V);
  float* dxc = dx ? scratch<float>(Scratch::loss_dx, C * D) : nullptr;
  bf16_t* xcb = scratch<bf16_t>(Scratch::loss_xb, C * D);
  bf16_t* dlb = grad ? scratch<bf16_t>(Scratch::loss_dlogits_b, C * V) : nullptr;
  double* ce = scratch<double>(Scratch::loss_ce, C);
  double* lz = scratch<double>(Scratch::loss_lz, C);
  LossSums r;
  for (int64_t c0 = 0; c0 < nvalid; c0 += C) {
    const int64_t c = std::min(C, nvalid - c0);
    for (int64_t r0 = 0; r0 < c; ++r0)
      std::copy(x + rows[c0 + r0] * D, x + rows[c0 + r0] * D + D, xc + r0 * D);
    f32_to_bf16(xc, xcb, c * D);
    gemm_bf16(false, true, c, V, D, 1.0f, xcb, W, 0.0f, logits);
    {
      OLMO_PROFILE("loss", 0);
#pragma omp parallel for schedule(static)
      for (int64_t r0 = 0; r0 < c; ++r0) {
        float* z = logits + r0 * V;
        const int32_t t = targets[rows[c0 + r0]];
        const float lse = lm_row_lse(z, V);
        ce[r0] = double(lse) - double(z[t]);
        lz[r0] = double(lse) * double(lse);
        if (grad) {
          lm_row_grad(z, V, lse, grad_scale * (1.0f + 2.0f * z_coef * lse));
          z[t] -= grad_scale;
          f32_to_bf16_serial(z, dlb + r0 * V, V);
        }
      }
    }
    for (int64_t r0 = 0; r0 < c; ++r0) r.ce_sum += ce[r0], r.z_sum += lz[r0];
    r.count += c;
    if (dx) {
      gemm_bf16(false, false, c, D, V, 1.0f, dlb, W, 0.0f, dxc);
      for (int64_t r0 = 0; r0 < c; ++r0)
        std::copy(dxc + r0 * D, dxc + r0 * D + D, dx + rows[c0 + r0] * D);
    }
    if (dW) gemm_bf16(true, false, V, D, c, 1.0f, dlb, xcb, 1.0f, dW);
  }
  return r;
}

}  // namespace olmo::kernels
