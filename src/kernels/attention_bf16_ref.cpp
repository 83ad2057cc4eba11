// Reference bf16 attention (contract and rounding points in attention_bf16.h): plain loops, one
// query row at a time with O(T) scratch, accumulation in double, templated so the gradient
// check can run it in double with the rounding switched off. Slow and obviously correct: what
// the VDPBF16PS kernels are tested against.
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/attention_bf16.h"
#include "kernels/attention_mask.h"

namespace olmo::kernels {

float bf16_round_ftz(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    u = 0x7fc00000u;  // NaN
  } else if ((u & 0x7f800000u) == 0) {
    u &= 0x80000000u;  // zero or denormal -> signed zero
  } else {
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  }
  std::memcpy(&x, &u, 4);
  return x;
}

namespace {
// bf16(x) as a double when rounding, x itself otherwise.
inline double rb(double x, bool round) { return round ? double(bf16_round_ftz(float(x))) : x; }

template <class T>
std::vector<double> rounded(const T* x, int64_t n, bool round) {
  std::vector<double> r(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) r[size_t(i)] = rb(double(x[i]), round);
  return r;
}
}  // namespace

template <class T>
void attention_forward_bf16_ref(const AttnShape& s, const T* q, const T* k, const T* v,
                                const int32_t* doc_ids, T* out, T* lse, bool round) {
  check_attn_shape(s);
  const int64_t B = s.B, Tn = s.T, H = s.H, KV = s.KV, hd = s.hd, G = H / KV;
  const double c = 1.0 / std::sqrt(double(hd)) / std::log(2.0);  // log2e / sqrt(hd)
  const auto qr = rounded(q, B * Tn * H * hd, round), kr = rounded(k, B * Tn * KV * hd, round),
             vr = rounded(v, B * Tn * KV * hd, round);
  std::vector<double> sc(Tn);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Tn; ++i) {
        const double* qi = qr.data() + ((b * Tn + i) * H + h) * hd;
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j <= i; ++j) {
          if (!visible(s, doc_ids, b, i, j)) continue;
          const double* kj = kr.data() + ((b * Tn + j) * KV + h / G) * hd;
          double d = 0;
          for (int64_t p = 0; p < hd; ++p) d += qi[p] * kj[p];
          sc[j] = d * c;
          mx = std::fmax(mx, sc[j]);
        }
        const double m = std::ceil(mx);  // integer running max (base 2)
        double l = 0;
        for (int64_t j = 0; j <= i; ++j)
          if (visible(s, doc_ids, b, i, j)) l += std::exp2(sc[j] - m);
        lse[(b * H + h) * Tn + i] = T((m + std::log2(l)) * std::log(2.0));
        T* oi = out + ((b * Tn + i) * H + h) * hd;
        for (int64_t p = 0; p < hd; ++p) {
          double o = 0;
          for (int64_t j = 0; j <= i; ++j)
            if (visible(s, doc_ids, b, i, j))
              o += rb(std::exp2(sc[j] - m), round) * vr[((b * Tn + j) * KV + h / G) * hd + p];
          oi[p] = T(o / l);
        }
      }
}

template <class T>
void attention_backward_bf16_ref(const AttnShape& s, const T* q, const T* k, const T* v,
                                 const int32_t* doc_ids, const T* out, const T* lse,
                                 const T* dout, T* dq, T* dk, T* dv, bool round) {
  check_attn_shape(s);
  const int64_t B = s.B, Tn = s.T, H = s.H, KV = s.KV, hd = s.hd, G = H / KV;
  const double scale = 1.0 / std::sqrt(double(hd));
  const int64_t nq = B * Tn * H * hd, nk = B * Tn * KV * hd;
  const auto qr = rounded(q, nq, round), kr = rounded(k, nk, round), vr = rounded(v, nk, round),
             gr = rounded(dout, nq, round);
  std::vector<double> gq(size_t(nq), 0.0), gk(size_t(nk), 0.0), gv(size_t(nk), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Tn; ++i) {
        const int64_t qo = ((b * Tn + i) * H + h) * hd;
        const double L = double(lse[(b * H + h) * Tn + i]);
        double D = 0;  // D_i = dout~_i . out_i
        for (int64_t p = 0; p < hd; ++p) D += gr[qo + p] * double(out[qo + p]);
        for (int64_t j = 0; j <= i; ++j) {
          if (!visible(s, doc_ids, b, i, j)) continue;
          const int64_t ko = ((b * Tn + j) * KV + h / G) * hd;
          double sij = 0, dp = 0;
          for (int64_t p = 0; p < hd; ++p) {
            sij += qr[qo + p] * kr[ko + p];
            dp += gr[qo + p] * vr[ko + p];
          }
          const double pij = std::exp(sij * scale - L);
          const double pb = rb(pij, round);
          const double ds = rb(pij * (dp - D) * scale, round);
          for (int64_t p = 0; p < hd; ++p) {
            gv[ko + p] += pb * gr[qo + p];
            gq[qo + p] += ds * kr[ko + p];
            gk[ko + p] += ds * qr[qo + p];
          }
        }
      }
  for (int64_t i = 0; i < nq; ++i) dq[i] = T(gq[i]);
  for (int64_t i = 0; i < nk; ++i) dk[i] = T(gk[i]), dv[i] = T(gv[i]);
}

#define OLMO_INSTANTIATE(T)                                                                    \
  template void attention_forward_bf16_ref<T>(const AttnShape&, const T*, const T*, const T*, \
                                              const int32_t*, T*, T*, bool);                   \
  template void attention_backward_bf16_ref<T>(const AttnShape&, const T*, const T*, const T*, \
                                               const int32_t*, const T*, const T*, const T*,   \
                                               T*, T*, T*, bool);
OLMO_INSTANTIATE(float)
OLMO_INSTANTIATE(double)
#undef OLMO_INSTANTIATE

}  // namespace olmo::kernels
