// Fused, chunked LM head + cross-entropy + z-loss (contract in loss.h), one chunk loop for both
// matmul input types. Per chunk of valid rows: gather x rows (fp32; rounded to bf16 for the bf16
// path), logits = x_c W^T (gemm / gemm_bf16, fp32 out), per-row lse and in-place d/dlogits in
// fp32 (the row kernels of loss_body.h, whose scalar copy is compiled here; OpenMP over rows;
// the bf16 path rounds each row of d/dlogits to bf16 while it is in cache), dx_c = dlogits W,
// dW += dlogits^T x_c (beta = 1 into the fp32 dW). Sums are accumulated per row and reduced in
// row order (deterministic). Profiler: the gemms are timed by gemm(), the row work as "loss".
#include "kernels/loss.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "core/profile.h"
#include "kernels/scratch.h"
#include "kernels/dispatch.h"
#include "kernels/gemm.h"
#include "kernels/loss_body.h"

namespace olmo::kernels {
float lm_row_lse(const float* z, int64_t V) { return OLMO_DISPATCH(loss_row_lse)(z, V); }
void lm_row_grad(float* z, int64_t V, float lse, float a) {
  OLMO_DISPATCH(loss_row_grad)(z, V, lse, a);
}

namespace {
// One gemm name for both input types (gemm.h).
void mm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, const float* B,
        float beta, float* C) {
  gemm(ta, tb, M, N, K, 1.0f, A, B, beta, C);
}
void mm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const bf16_t* A, const bf16_t* B,
        float beta, float* C) {
  gemm_bf16(ta, tb, M, N, K, 1.0f, A, B, beta, C);
}

// WT = float: the matmul operands are the fp32 tiles themselves; WT = bf16_t: bf16 copies of the
// gathered x rows and of d/dlogits (chunk_rows * (V + D) bf16 more).
template <class WT>
LossSums chunked_loss(const char* name, const float* x, const WT* W, const int32_t* targets,
                      int64_t N, int64_t D, int64_t V, float z_coef, float grad_scale, float* dx,
                      float* dW, int64_t chunk_rows) {
  constexpr bool kBf16 = std::is_same_v<WT, bf16_t>;
  OLMO_CHECK(N >= 0 && D > 0 && V > 0, name, ": bad shape N=", N, " D=", D, " V=", V);
  std::vector<int64_t> rows;  // valid rows, in order
  rows.reserve(size_t(N));
  for (int64_t i = 0; i < N; ++i) {
    OLMO_CHECK(targets[i] == kIgnoreIndex || (targets[i] >= 0 && targets[i] < V), name,
               ": target[", i, "] = ", targets[i], " is outside [0, ", V, ")");
    if (targets[i] != kIgnoreIndex) rows.push_back(i);
  }
  if (dx) std::fill(dx, dx + N * D, 0.0f);
  // Auto: the largest multiple of 16 rows whose fp32 [rows, V] logits tile fits in 160 MB
  // (V = 100352: 416 rows), within [16, 1024]. Larger chunks help the gemms (M = rows, and the
  // dW gemm's K = rows: fewer passes over the fp32 dW) but cost memory. Measured on a Zen 3
  // (AVX2), N 2048, D 768, V 100352, loss + dx + dW (bench_attention cmp, interleaved, 2 reps
  // each): 160 rows 93-118 GFLOP/s, 256: 111-138, 384: 125-153, 512: 118-144, 768: 130-154,
  // 1024: 127-133 (bench/results/attention_loss.md).
  if (chunk_rows <= 0)
    chunk_rows = std::clamp<int64_t>((int64_t(160) << 20) / (4 * V) / 16 * 16, 16, 1024);
  const int64_t nvalid = int64_t(rows.size());
  const int64_t C = std::max<int64_t>(1, std::min(chunk_rows, nvalid));
  const bool grad = dx || dW;
  const auto row_lse = OLMO_DISPATCH(loss_row_lse);
  const auto row_grad = OLMO_DISPATCH(loss_row_grad);

  // Tiles in this thread's scratch (kernels/scratch.h): allocated and page-faulted once per run.
  float* xc = scratch<float>(Scratch::loss_x, C * D);
  float* logits = scratch<float>(Scratch::loss_logits, C * V);
  float* dxc = dx ? scratch<float>(Scratch::loss_dx, C * D) : nullptr;
  double* ce = scratch<double>(Scratch::loss_ce, C);
  double* lz = scratch<double>(Scratch::loss_lz, C);
  // The gemm operands: the fp32 tiles, or their bf16 copies.
  const WT* xm;
  const WT* dlm;
  bf16_t* xcb = nullptr;
  bf16_t* dlb = nullptr;
  if constexpr (kBf16) {
    xcb = scratch<bf16_t>(Scratch::loss_xb, C * D);
    dlb = grad ? scratch<bf16_t>(Scratch::loss_dlogits_b, C * V) : nullptr;
    xm = xcb, dlm = dlb;
  } else {
    xm = xc, dlm = logits;
  }
  LossSums r;
  for (int64_t c0 = 0; c0 < nvalid; c0 += C) {
    const int64_t c = std::min(C, nvalid - c0);
    for (int64_t r0 = 0; r0 < c; ++r0)
      std::copy(x + rows[c0 + r0] * D, x + rows[c0 + r0] * D + D, xc + r0 * D);
    if constexpr (kBf16) f32_to_bf16(xc, xcb, c * D);
    mm(false, true, c, V, D, xm, W, 0.0f, logits);
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
          if constexpr (kBf16) f32_to_bf16_serial(z, dlb + r0 * V, V);
        }
      }
    }
    for (int64_t r0 = 0; r0 < c; ++r0) r.ce_sum += ce[r0], r.z_sum += lz[r0];
    r.count += c;
    if (dx) {
      mm(false, false, c, D, V, dlm, W, 0.0f, dxc);
      for (int64_t r0 = 0; r0 < c; ++r0)
        std::copy(dxc + r0 * D, dxc + r0 * D + D, dx + rows[c0 + r0] * D);
    }
    if (dW) mm(true, false, V, D, c, dlm, xm, 1.0f, dW);
  }
  return r;
}
}  // namespace

LossSums lm_head_loss(const float* x, const float* W, const int32_t* targets, int64_t N, int64_t D,
                      int64_t V, float z_coef, float grad_scale, float* dx, float* dW,
                      int64_t chunk_rows) {
  return chunked_loss("lm_head_loss", x, W, targets, N, D, V, z_coef, grad_scale, dx, dW,
                      chunk_rows);
}

LossSums lm_head_loss_bf16(const float* x, const bf16_t* W, const int32_t* targets, int64_t N,
                           int64_t D, int64_t V, float z_coef, float grad_scale, float* dx,
                           float* dW, int64_t chunk_rows) {
  return chunked_loss("lm_head_loss_bf16", x, W, targets, N, D, V, z_coef, grad_scale, dx, dW,
                      chunk_rows);
}

}  // namespace olmo::kernels
