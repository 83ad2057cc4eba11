// RMSNorm over the last dimension, as Hugging Face Olmo3RMSNorm / OLMo-core RMSNorm:
//   rstd[n] = 1 / sqrt(mean_d x[n,d]^2 + eps)        (fp32 accumulation, several partial sums)
//   y[n,d]  = w[d] * (x[n,d] * rstd[n])              (weight applied in fp32, no downcast)
// Shapes: x, y, dy, dx [N, D] row-major; w, dw [D]; rstd [N] (saved by forward for backward).
// Backward:  g = w * dy;  dx = rstd * g - x * rstd^3 * mean_d(g * x);  dw += sum_n dy * x * rstd.
// Cost: forward reads x once and writes y (one pass over each row, the row stays in L1);
// backward reads dy and x once, writes dx. Threads: OpenMP over rows. dw is reduced
// deterministically: rows are cut into a number of chunks that depends only on N, each chunk sums
// its rows in order, and the chunk partials are added in chunk order, so the result is the same
// bit for bit whatever the thread count.
#pragma once
#include <cmath>
#include <cstdint>

namespace olmo::kernels {

void rmsnorm_forward(const float* x, const float* w, float* y, float* rstd, int64_t N, int64_t D,
                     float eps);
// dx overwritten; dw ACCUMULATED (+=).
void rmsnorm_backward(const float* dy, const float* x, const float* w, const float* rstd,
                      float* dx, float* dw, int64_t N, int64_t D);

// Readable references (template so gradient checks run in double). Same contracts.
template <class T>
void rmsnorm_forward_ref(const T* x, const T* w, T* y, T* rstd, int64_t N, int64_t D, T eps) {
  for (int64_t n = 0; n < N; ++n) {
    const T* xr = x + n * D;
    double ss = 0;
    for (int64_t d = 0; d < D; ++d) ss += double(xr[d]) * double(xr[d]);
    T r = T(1) / std::sqrt(T(ss / double(D)) + eps);
    rstd[n] = r;
    for (int64_t d = 0; d < D; ++d) y[n * D + d] = w[d] * (xr[d] * r);
  }
}

template <class T>
void rmsnorm_backward_ref(const T* dy, const T* x, const T* w, const T* rstd, T* dx, T* dw,
                          int64_t N, int64_t D) {
  for (int64_t n = 0; n < N; ++n) {
    const T* xr = x + n * D;
    const T* g = dy + n * D;
    T r = rstd[n];
    double dot = 0;  // sum_d w*dy*x
    for (int64_t d = 0; d < D; ++d) dot += double(w[d]) * double(g[d]) * double(xr[d]);
    T c = T(double(r) * double(r) * double(r) * dot / double(D));
    for (int64_t d = 0; d < D; ++d) {
      dx[n * D + d] = r * w[d] * g[d] - c * xr[d];
      dw[d] += g[d] * xr[d] * r;
    }
  }
}

}  // namespace olmo::kernels
