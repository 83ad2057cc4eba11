// The bf16 attention kernels' exact emulation (contract in attention_bf16.h) for every CPU or ISA
// without AVX512_BF16: the same bits as attention_bf16_avx512bf16.cpp, written once in plain C++
// (a baseline file: one code path for OLMO_ISA scalar, avx2 and avx512 without VDPBF16PS).
// It repeats the native kernels' tiles, skipping and per-element operation order exactly:
//   * every tile product is a VDPBF16PS chain per output element (dp below: acc read as zero if
//     denormal, then fma of the odd pair element, flush, fma of the even one, flush; measured
//     semantics, ctest kernels_bf16_dot_semantics) over the same pairs in the same order,
//     including the zero padding (hd to a multiple of 16, T to a multiple of 64, odd query rows);
//   * the roundings bf16(x) are VCVTNEPS2BF16's (bf16_round_ftz);
//   * the softmax is the native code's lane arithmetic (max, ceil, vexp2, fma, the sums in the
//     same order) on one element at a time (simd.h's scalar Vec: the same vexp2 bits).
// Not a speed path: scalar, about 20x slower than the native kernels per core.
#include <omp.h>
#include <stdint.h>
#include <string.h>

#include <cmath>
#include <vector>

#include "kernels/attention.h"
#include "kernels/attention_bf16.h"
#include "kernels/attention_bf16_emu.h"
#include "kernels/attention_tiles.h"
#include "kernels/simd.h"

namespace olmo::kernels {
namespace OLMO_ISA_NS {
namespace {

constexpr float kLog2eF = 1.4426950408889634f;
constexpr float kLn2F = 0.6931471805599453f;

inline float flush(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) == 0) u &= 0x80000000u;
  memcpy(&x, &u, 4);
  return x;
}

// One VDPBF16PS lane: acc + a0 b0 + a1 b1, odd pair first (a, b: bf16 values, never denormal).
inline float dp(float acc, float a0, float a1, float b0, float b1) {
  acc = flush(std::fma(a1, b1, flush(acc)));
  return flush(std::fma(a0, b0, acc));
}

// acc + sum over pairs p < np of dp(a[2p], a[2p+1], b[2p * sb], b[(2p+1) * sb]).
inline float chain(float acc, int64_t np, const float* a, int64_t sa, const float* b, int64_t sb) {
  for (int64_t p = 0; p < np; ++p)
    acc = dp(acc, a[2 * p * sa], a[(2 * p + 1) * sa], b[2 * p * sb], b[(2 * p + 1) * sb]);
  return acc;
}

inline float mx(float a, float b) { return a > b ? a : b; }  // MAXPS: b where equal or NaN

// Rows [0, Tp) of x (row t at x + t * stride, t < T; zero beyond) rounded into xb [Tp, hdp].
void cvt_rows(const float* x, int64_t T, int64_t stride, int64_t hd, int64_t Tp, int64_t hdp,
              float* xb) {
  for (int64_t t = 0; t < Tp; ++t)
    for (int64_t c = 0; c < hdp; ++c)
      xb[t * hdp + c] = t < T && c < hd ? bf16_round_ftz(x[t * stride + c]) : 0.0f;
}

}  // namespace
}  // namespace OLMO_ISA_NS

namespace attention_bf16_emu {
using namespace ::olmo::kernels::OLMO_ISA_NS;

void forward(const AttnShape& s, const float* q, const float* k, const float* v,
             const int32_t* doc_ids, float* out, float* lse) {
  const int64_t B = s.B, T = s.T, H = s.H, KV = s.KV, hd = s.hd, G = H / KV, w = s.window;
  const int64_t Tp = round_up(T, kBc), hdp = round_up(hd, 16), hh = hdp / 2;
  const int64_t nt = (T + kBr - 1) / kBr;
  const float c = static_cast<float>(1.0 / sqrt(static_cast<double>(hd))) * kLog2eF;
  std::vector<float> kb(size_t(B * KV * Tp * hdp)), vb(size_t(B * KV * Tp * hdp));
#pragma omp parallel for schedule(static)
  for (int64_t bg = 0; bg < B * KV; ++bg) {
    const int64_t b = bg / KV, g = bg % KV;
    cvt_rows(k + (b * T * KV + g) * hd, T, KV * hd, hd, Tp, hdp, kb.data() + bg * Tp * hdp);
    cvt_rows(v + (b * T * KV + g) * hd, T, KV * hd, hd, Tp, hdp, vb.data() + bg * Tp * hdp);
  }
#pragma omp parallel
  {
    std::vector<float> St(size_t(kBc * kBr)), O(size_t(kBr * hdp)), Q(size_t(kBr * hdp));
    std::vector<float> P(size_t(kBr * kBc)), m(kBr), l(kBr), alpha(kBr);
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < B * H * nt; ++task) {
      const int64_t it = nt - 1 - task % nt, h = (task / nt) % H, b = task / (nt * H);
      const int64_t i0 = it * kBr, rows = imin(kBr, T - i0), i1 = i0 + rows;
      const int64_t bg = b * KV + h / G;
      const int32_t* doc = doc_ids ? doc_ids + b * T : nullptr;
      const float* K = kb.data() + bg * Tp * hdp;
      const float* V = vb.data() + bg * Tp * hdp;
      cvt_rows(q + ((b * T + i0) * H + h) * hd, rows, H * hd, hd, kBr, hdp, Q.data());
      std::fill(O.begin(), O.end(), 0.0f);
      for (int64_t r = 0; r < kBr; ++r) m[r] = -INFINITY, l[r] = 0.0f;
      const int64_t jstart = w > 0 ? imax(0, i0 - w + 1) / kBc * kBc : 0;
      for (int64_t j0 = jstart; j0 < i1; j0 += kBc) {
        const int cw = classify_window(i0, i1, j0, j0 + kBc, w);
        if (cw == 0) continue;
        const int cd = classify_docs(doc, i0, i1, j0, imin(j0 + kBc, T));
        if (cd == 0) continue;
        const int64_t kr = imin(kBc, T - j0);
        for (int64_t r = 0; r < kBc; ++r)  // S^T [keys, queries]
          for (int64_t x = 0; x < kBr; ++x)
            St[r * kBr + x] = r < kr ? chain(0.0f, hh, K + (j0 + r) * hdp, 1, &Q[x * hdp], 1)
                                     : -INFINITY;
        if (cw == 2 || cd == 2) apply_mask_t(St.data(), kr, rows, i0, j0, w, doc, cd == 2);
        for (int64_t x = 0; x < rows; ++x) {
          float mxv = St[x];
          for (int64_t r = 1; r < kBc; ++r) mxv = mx(mxv, St[r * kBr + x]);
          const float mold = m[x], mtile = std::ceil(mxv * c), mnew = mx(mold, mtile);
          const float nm = 0.0f - mx(mnew, -3.0e38f);
          const float a = vexp2(mold + nm);
          float sum = 0.0f;
          for (int64_t r = 0; r < kBc; r += 2) {
            const float p0 = vexp2(std::fma(St[r * kBr + x], c, nm));
            const float p1 = vexp2(std::fma(St[(r + 1) * kBr + x], c, nm));
            sum = (sum + p0) + p1;
            P[x * kBc + r] = bf16_round_ftz(p0), P[x * kBc + r + 1] = bf16_round_ftz(p1);
          }
          l[x] = std::fma(l[x], a, sum);
          m[x] = mnew;
          alpha[x] = a;
        }
        for (int64_t r = 0; r < rows; ++r) {
          float* o = &O[r * hdp];
          if (alpha[r] != 1.0f)
            for (int64_t x = 0; x < hdp; ++x) o[x] = alpha[r] * o[x];
          for (int64_t x = 0; x < hdp; ++x)
            o[x] = chain(o[x], kBc / 2, &P[r * kBc], 1, V + j0 * hdp + x, hdp);
        }
      }
      for (int64_t r = 0; r < rows; ++r) {
        const float inv = 1.0f / l[r];
        float* o = out + ((b * T + i0 + r) * H + h) * hd;
        for (int64_t x = 0; x < hd; ++x) o[x] = O[r * hdp + x] * inv;
        lse[(b * H + h) * T + i0 + r] = (m[r] + vlog2(l[r])) * kLn2F;
      }
    }
  }
}

void backward(const AttnShape& s, const float* q, const float* k, const float* v,
              const int32_t* doc_ids, const float* out, const float* lse, const float* dout,
              float* dq, float* dk, float* dv) {
  const int64_t B = s.B, T = s.T, H = s.H, KV = s.KV, hd = s.hd, G = H / KV, w = s.window;
  const int64_t Tp = round_up(T, kBc), hdp = round_up(hd, 16), hh = hdp / 2;
  const float scale = static_cast<float>(1.0 / sqrt(static_cast<double>(hd)));
  const float c = scale * kLog2eF;
  const int64_t n = Tp * hdp, tile = kBr * kBc;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t bg = 0; bg < B * KV; ++bg) {
    const int64_t b = bg / KV, g = bg % KV;
    const int32_t* doc = doc_ids ? doc_ids + b * T : nullptr;
    std::vector<float> kb(n), vb(n), qb(n), gb(n), dqb(n), dkb(n, 0.0f), dvb(n, 0.0f);
    std::vector<float> P(tile), dS(tile), D(Tp), L2(Tp);
    cvt_rows(k + (b * T * KV + g) * hd, T, KV * hd, hd, Tp, hdp, kb.data());
    cvt_rows(v + (b * T * KV + g) * hd, T, KV * hd, hd, Tp, hdp, vb.data());
    for (int64_t h = g * G; h < (g + 1) * G; ++h) {
      cvt_rows(q + (b * T * H + h) * hd, T, H * hd, hd, Tp, hdp, qb.data());
      cvt_rows(dout + (b * T * H + h) * hd, T, H * hd, hd, Tp, hdp, gb.data());
      std::fill(dqb.begin(), dqb.end(), 0.0f);
      for (int64_t t = 0; t < T; ++t) {
        const float* o = out + ((b * T + t) * H + h) * hd;
        float d = 0.0f;
        for (int64_t x = 0; x < hd; ++x) d += gb[t * hdp + x] * o[x];
        D[t] = d;
        L2[t] = lse[(b * H + h) * T + t] * kLog2eF;
      }
      for (int64_t j0 = 0; j0 < T; j0 += kBc) {
        const int64_t iend = w > 0 ? imin(T, j0 + kBc - 1 + w) : T;
        for (int64_t i0 = j0; i0 < iend; i0 += kBr) {
          const int64_t rows = imin(kBr, T - i0), i1 = i0 + rows, rp = (rows + 1) / 2;
          const int cw = classify_window(i0, i1, j0, j0 + kBc, w);
          if (cw == 0) continue;
          const int cd = classify_docs(doc, i0, i1, j0, imin(j0 + kBc, T));
          if (cd == 0) continue;
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t x = 0; x < kBc; ++x)
              P[r * kBc + x] = chain(0.0f, hh, &qb[(i0 + r) * hdp], 1, &kb[(j0 + x) * hdp], 1);
          if (cw == 2 || cd == 2) apply_mask(P.data(), rows, i0, j0, w, doc, cd == 2);
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t x = 0; x < kBc; ++x)
              P[r * kBc + x] = vexp2(std::fma(P[r * kBc + x], c, -L2[i0 + r]));
          // P~ and dS~ by query pairs; a missing odd row (rows odd) is zero.
          auto at = [&](const std::vector<float>& X, int64_t r, int64_t x) {
            return r < rows ? bf16_round_ftz(X[r * kBc + x]) : 0.0f;
          };
          // dst[key j0 + x] += sum over query pairs of X~ (pairs along queries) times rows of Y.
          auto by_query_pairs = [&](std::vector<float>& dst, const std::vector<float>& X,
                                    const std::vector<float>& Y) {
            for (int64_t x = 0; x < kBc; ++x)
              for (int64_t y = 0; y < hdp; ++y) {
                float acc = dst[(j0 + x) * hdp + y];
                for (int64_t p = 0; p < rp; ++p)
                  acc = dp(acc, at(X, 2 * p, x), at(X, 2 * p + 1, x), Y[(i0 + 2 * p) * hdp + y],
                           Y[(i0 + 2 * p + 1) * hdp + y]);
                dst[(j0 + x) * hdp + y] = acc;
              }
          };
          by_query_pairs(dvb, P, gb);
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t x = 0; x < kBc; ++x) {
              const float dpv = chain(0.0f, hh, &gb[(i0 + r) * hdp], 1, &vb[(j0 + x) * hdp], 1);
              dS[r * kBc + x] = P[r * kBc + x] * ((dpv - D[i0 + r]) * scale);
            }
          by_query_pairs(dkb, dS, qb);
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t y = 0; y < hdp; ++y) {
              float acc = dqb[(i0 + r) * hdp + y];
              for (int64_t p = 0; p < kBc / 2; ++p)
                acc = dp(acc, at(dS, r, 2 * p), at(dS, r, 2 * p + 1), kb[(j0 + 2 * p) * hdp + y],
                         kb[(j0 + 2 * p + 1) * hdp + y]);
              dqb[(i0 + r) * hdp + y] = acc;
            }
        }
      }
      for (int64_t t = 0; t < T; ++t)
        memcpy(dq + ((b * T + t) * H + h) * hd, &dqb[t * hdp], sizeof(float) * hd);
    }
    for (int64_t t = 0; t < T; ++t) {
      memcpy(dk + ((b * T + t) * KV + g) * hd, &dkb[t * hdp], sizeof(float) * hd);
      memcpy(dv + ((b * T + t) * KV + g) * hd, &dvb[t * hdp], sizeof(float) * hd);
    }
  }
}

}  // namespace attention_bf16_emu
}  // namespace olmo::kernels
