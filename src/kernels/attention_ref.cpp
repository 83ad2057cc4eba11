// Reference attention (plain loops, one query row at a time with O(T) scratch), templated so
// the gradient check can run it in double. Slow (no tiling, no vectorisation) and obviously
// correct: it is what the fast tiled kernels in attention.cpp are tested against.
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/attention.h"
#include "kernels/attention_mask.h"

namespace olmo::kernels {

template <class T>
void attention_forward_ref(const AttnShape& s, const T* q, const T* k, const T* v,
                           const int32_t* doc_ids, T* out, T* lse) {
  check_attn_shape(s);
  const int64_t B = s.B, Tn = s.T, H = s.H, KV = s.KV, hd = s.hd, G = H / KV;
  const double scale = 1.0 / std::sqrt(double(hd));
  std::vector<double> sc(Tn);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Tn; ++i) {
        const T* qi = q + ((b * Tn + i) * H + h) * hd;
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j <= i; ++j) {
          if (!visible(s, doc_ids, b, i, j)) continue;
          const T* kj = k + ((b * Tn + j) * KV + h / G) * hd;
          double d = 0;
          for (int64_t p = 0; p < hd; ++p) d += double(qi[p]) * double(kj[p]);
          sc[j] = d * scale;
          m = std::fmax(m, sc[j]);
        }
        double l = 0;
        for (int64_t j = 0; j <= i; ++j)
          if (visible(s, doc_ids, b, i, j)) l += std::exp(sc[j] - m);
        const double L = m + std::log(l);
        lse[(b * H + h) * Tn + i] = T(L);
        T* oi = out + ((b * Tn + i) * H + h) * hd;
        for (int64_t p = 0; p < hd; ++p) {
          double o = 0;
          for (int64_t j = 0; j <= i; ++j)
            if (visible(s, doc_ids, b, i, j))
              o += std::exp(sc[j] - L) * double(v[((b * Tn + j) * KV + h / G) * hd + p]);
          oi[p] = T(o);
        }
      }
}

template <class T>
void attention_backward_ref(const AttnShape& s, const T* q, const T* k, const T* v,
                            const int32_t* doc_ids, const T* out, const T* lse, const T* dout,
                            T* dq, T* dk, T* dv) {
  check_attn_shape(s);
  const int64_t B = s.B, Tn = s.T, H = s.H, KV = s.KV, hd = s.hd, G = H / KV;
  const double scale = 1.0 / std::sqrt(double(hd));
  // Accumulate in double, round once at the end.
  std::vector<double> gq(B * Tn * H * hd, 0.0), gk(B * Tn * KV * hd, 0.0), gv(gk.size(), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Tn; ++i) {
        const int64_t qo = ((b * Tn + i) * H + h) * hd;
        const double L = double(lse[(b * H + h) * Tn + i]);
        double D = 0;  // D_i = dout_i . out_i = sum_j p_ij dp_ij
        for (int64_t p = 0; p < hd; ++p) D += double(dout[qo + p]) * double(out[qo + p]);
        for (int64_t j = 0; j <= i; ++j) {
          if (!visible(s, doc_ids, b, i, j)) continue;
          const int64_t ko = ((b * Tn + j) * KV + h / G) * hd;
          double sij = 0, dp = 0;
          for (int64_t p = 0; p < hd; ++p) {
            sij += double(q[qo + p]) * double(k[ko + p]);
            dp += double(dout[qo + p]) * double(v[ko + p]);
          }
          const double pij = std::exp(sij * scale - L);
          const double ds = pij * (dp - D) * scale;
          for (int64_t p = 0; p < hd; ++p) {
            gv[ko + p] += pij * double(dout[qo + p]);
            gq[qo + p] += ds * double(k[ko + p]);
            gk[ko + p] += ds * double(q[qo + p]);
          }
        }
      }
  for (size_t i = 0; i < gq.size(); ++i) dq[i] = T(gq[i]);
  for (size_t i = 0; i < gk.size(); ++i) dk[i] = T(gk[i]), dv[i] = T(gv[i]);
}

template void attention_forward_ref<float>(const AttnShape&, const float*, const float*,
                                           const float*, const int32_t*, float*, float*);
template void attention_forward_ref<double>(const AttnShape&, const double*, const double*,
                                            const double*, const int32_t*, double*, double*);
template void attention_backward_ref<float>(const AttnShape&, const float*, const float*,
                                            const float*, const int32_t*, const float*,
                                            const float*, const float*, float*, float*, float*);
template void attention_backward_ref<double>(const AttnShape&, const double*, const double*,
                                             const double*, const int32_t*, const double*,
                                             const double*, const double*, double*, double*,
                                             double*);

int64_t attention_visible_pairs(const AttnShape& s, const int32_t* doc_ids) {
  check_attn_shape(s);
  int64_t n = 0;
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t i = 0; i < s.T; ++i) {
      const int64_t lo = s.window > 0 && i - s.window + 1 > 0 ? i - s.window + 1 : 0;
      if (!doc_ids) {
        n += i - lo + 1;
        continue;
      }
      for (int64_t j = lo; j <= i; ++j) n += doc_ids[b * s.T + j] == doc_ids[b * s.T + i];
    }
  return n;
}

}  // namespace olmo::kernels
