// lm_head_loss_bf16 (contract in loss_bf16.h): loss.cpp's chunk loop with bf16 GEMM inputs.
#include "kernels/loss_bf16.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/cpu.h"
#include "core/error.h"
#include "core/profile.h"
#include "kernels/bf16_isa.h"
#include "kernels/gemm.h"

namespace olmo::kernels {
namespace {
using ToBf16 = void (*)(const float*, bf16_t*, int64_t);
ToBf16 to_bf16_row() {
  switch (active_isa()) {
    case Isa::avx512: return bf16_avx512::to_bf16;
    case Isa::avx2: return bf16_avx2::to_bf16;
    default: return bf16_scalar::to_bf16;
  }
}
}  // namespace

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
  const ToBf16 cvt = to_bf16_row();

  std::vector<float> xc(size_t(C * D)), logits(size_t(C * V)), dxc(dx ? size_t(C * D) : 0);
  std::vector<bf16_t> xcb(size_t(C * D)), dlb(grad ? size_t(C * V) : 0);
  std::vector<double> ce(static_cast<size_t>(C)), lz(static_cast<size_t>(C));
  LossSums r;
  for (int64_t c0 = 0; c0 < nvalid; c0 += C) {
    const int64_t c = std::min(C, nvalid - c0);
    for (int64_t r0 = 0; r0 < c; ++r0)
      std::copy(x + rows[c0 + r0] * D, x + rows[c0 + r0] * D + D, xc.data() + r0 * D);
    f32_to_bf16(xc.data(), xcb.data(), c * D);
    gemm_bf16(false, true, c, V, D, 1.0f, xcb.data(), W, 0.0f, logits.data());
    {
      OLMO_PROFILE("loss", 0);
#pragma omp parallel for schedule(static)
      for (int64_t r0 = 0; r0 < c; ++r0) {
        float* z = logits.data() + r0 * V;
        const int32_t t = targets[rows[c0 + r0]];
        const float lse = lm_row_lse(z, V);
        ce[r0] = double(lse) - double(z[t]);
        lz[r0] = double(lse) * double(lse);
        if (grad) {
          lm_row_grad(z, V, lse, grad_scale * (1.0f + 2.0f * z_coef * lse));
          z[t] -= grad_scale;
          cvt(z, dlb.data() + r0 * V, V);
        }
      }
    }
    for (int64_t r0 = 0; r0 < c; ++r0) r.ce_sum += ce[r0], r.z_sum += lz[r0];
    r.count += c;
    if (dx) {
      gemm_bf16(false, false, c, D, V, 1.0f, dlb.data(), W, 0.0f, dxc.data());
      for (int64_t r0 = 0; r0 < c; ++r0)
        std::copy(dxc.data() + r0 * D, dxc.data() + r0 * D + D, dx + rows[c0 + r0] * D);
    }
    if (dW) gemm_bf16(true, false, V, D, c, 1.0f, dlb.data(), xcb.data(), 1.0f, dW);
  }
  return r;
}

}  // namespace olmo::kernels
