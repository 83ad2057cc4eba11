// Global gradient-norm clipping (see grad_clip.h): deterministic blocked double accumulation.
#include "optim/grad_clip.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace olmo::optim {

namespace {
constexpr size_t kBlock = 65536;

// Sum of squares of one block in double with 8 interleaved accumulators (fixed order).
double block_sumsq(const float* g, size_t n) {
  double a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) {
      const double x = g[i + k];
      a[k] += x * x;
    }
  for (; i < n; ++i) {
    const double x = g[i];
    a[0] += x * x;
  }
  return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}
}  // namespace

double sum_squares(const float* g, size_t n) {
  const int64_t nb = static_cast<int64_t>((n + kBlock - 1) / kBlock);
  std::vector<double> part(static_cast<size_t>(nb), 0.0);
#pragma omp parallel for schedule(static) if (nb > 1)
  for (int64_t b = 0; b < nb; ++b) {
    const size_t lo = static_cast<size_t>(b) * kBlock;
    part[static_cast<size_t>(b)] = block_sumsq(g + lo, std::min(kBlock, n - lo));
  }
  double s = 0;
  for (double x : part) s += x;
  return s;
}

float total_grad_norm(const float* g, size_t n) {
  return static_cast<float>(std::sqrt(sum_squares(g, n)));
}

float clip_grads_with_norm(float* g, size_t n, double max_norm, float total_norm) {
  // torch: clip_coef = max_norm / (total_norm + 1e-6)  (python float / fp32 tensor is
  // reciprocal(t) * max_norm), then clamp(max=1.0) which keeps NaN.
  const float t = total_norm + static_cast<float>(1e-6);
  float coef = (1.0f / t) * static_cast<float>(max_norm);
  if (coef > 1.0f) coef = 1.0f;
  if (coef == 1.0f) return coef;  // g * 1 == g exactly
  const int64_t nn = static_cast<int64_t>(n);
#pragma omp parallel for schedule(static) if (nn > 65536)
  for (int64_t i = 0; i < nn; ++i) g[i] = g[i] * coef;
  return coef;
}

float clip_grad_norm(float* g, size_t n, double max_norm) {
  const float norm = total_grad_norm(g, n);
  clip_grads_with_norm(g, n, max_norm, norm);
  return norm;
}

}  // namespace olmo::optim
