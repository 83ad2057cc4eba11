// Reference fused LM-head loss: full [N, V] logits in double, plain loops; templated so the
// gradient check can differentiate it in double. Contract in loss.h.
#include <cmath>
#include <vector>

#include "core/error.h"
#include "kernels/loss.h"

namespace olmo::kernels {

template <class T>
LossSums lm_head_loss_ref(const T* x, const T* W, const int32_t* targets, int64_t N, int64_t D,
                          int64_t V, double z_coef, double grad_scale, T* dx, T* dW) {
  for (int64_t i = 0; i < N; ++i)
    OLMO_CHECK(targets[i] == kIgnoreIndex || (targets[i] >= 0 && targets[i] < V),
               "lm_head_loss: target[", i, "] = ", targets[i], " is outside [0, ", V, ")");
  LossSums r;
  std::vector<double> z(V);
  std::vector<double> gW(dW ? V * D : 0, 0.0);
  for (int64_t i = 0; i < N; ++i) {
    if (dx)
      for (int64_t d = 0; d < D; ++d) dx[i * D + d] = T(0);
    if (targets[i] == kIgnoreIndex) continue;
    double m = -INFINITY;
    for (int64_t v = 0; v < V; ++v) {
      double s = 0;
      for (int64_t d = 0; d < D; ++d) s += double(x[i * D + d]) * double(W[v * D + d]);
      z[v] = s;
      m = std::fmax(m, s);
    }
    double se = 0;
    for (int64_t v = 0; v < V; ++v) se += std::exp(z[v] - m);
    const double lse = m + std::log(se);
    r.ce_sum += lse - z[targets[i]];
    r.z_sum += lse * lse;
    r.count += 1;
    if (!dx && !dW) continue;
    // d/dz_v of grad_scale * (lse - z_t + z_coef * lse^2) = grad_scale * ((1 + 2 z_coef lse) p_v
    // - [v == t]).
    for (int64_t v = 0; v < V; ++v) {
      double g = grad_scale * ((1 + 2 * z_coef * lse) * std::exp(z[v] - lse) -
                               (v == targets[i] ? 1.0 : 0.0));
      for (int64_t d = 0; d < D; ++d) {
        if (dx) dx[i * D + d] = T(double(dx[i * D + d]) + g * double(W[v * D + d]));
        if (dW) gW[v * D + d] += g * double(x[i * D + d]);
      }
    }
  }
  if (dW)
    for (int64_t e = 0; e < V * D; ++e) dW[e] = T(double(dW[e]) + gW[e]);
  return r;
}

template LossSums lm_head_loss_ref<float>(const float*, const float*, const int32_t*, int64_t,
                                          int64_t, int64_t, double, double, float*, float*);
template LossSums lm_head_loss_ref<double>(const double*, const double*, const int32_t*, int64_t,
                                           int64_t, int64_t, double, double, double*, double*);

}  // namespace olmo::kernels
