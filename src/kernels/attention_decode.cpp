// One-token attention against a KV ring (see attention_decode.h).
#include "kernels/attention_decode.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/profile.h"
#include "kernels/scratch.h"

namespace olmo::kernels {

void attention_decode(int64_t rows, int64_t H, int64_t KV, int64_t hd, int64_t window,
                      int64_t slots, const float* q, const KvRing* ring, const int64_t* pos,
                      float* out) {
  OLMO_CHECK(rows >= 0 && H > 0 && KV > 0 && H % KV == 0 && hd > 0 && slots > 0,
             "attention_decode: bad shape rows ", rows, " H ", H, " KV ", KV, " hd ", hd,
             " slots ", slots);
  double visible = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t p = pos[i], lo = window > 0 ? std::max<int64_t>(0, p - window + 1) : 0;
    OLMO_CHECK(p >= 0 && p - lo < slots, "attention_decode: position ", p, " (window ", window,
               ") does not fit a ring of ", slots, " slots");
    visible += double(p - lo + 1);
  }
  OLMO_PROFILE("attention_decode", 4.0 * double(hd * H) * visible);
  const int64_t group = H / KV, Q = H * hd, K = KV * hd;
  const float scale = 1.0f / std::sqrt(float(hd));
#pragma omp parallel for schedule(static)
  for (int64_t ih = 0; ih < rows * H; ++ih) {
    const int64_t i = ih / H, h = ih % H, kvh = h / group, p = pos[i];
    const int64_t lo = window > 0 ? std::max<int64_t>(0, p - window + 1) : 0;
    const float* qh = q + i * Q + h * hd;
    const float* kc = ring[i].k;
    const float* vc = ring[i].v;
    float* sc = scratch<float>(Scratch::kv_scores, p - lo + 1);
    float mx = -INFINITY;
    for (int64_t t = lo; t <= p; ++t) {
      const float* kt = kc + (t % slots) * K + kvh * hd;
      float d = 0;
      for (int64_t e = 0; e < hd; ++e) d += qh[e] * kt[e];
      sc[t - lo] = d * scale;
      mx = std::max(mx, sc[t - lo]);
    }
    float sum = 0;
    for (int64_t t = lo; t <= p; ++t) sum += (sc[t - lo] = std::exp(sc[t - lo] - mx));
    float* oh = out + i * Q + h * hd;
    std::fill(oh, oh + hd, 0.0f);
    for (int64_t t = lo; t <= p; ++t) {
      const float* vt = vc + (t % slots) * K + kvh * hd;
      const float pr = sc[t - lo] / sum;
      for (int64_t e = 0; e < hd; ++e) oh[e] += pr * vt[e];
    }
  }
}

}  // namespace olmo::kernels
