// Internal: flash-attention style tiled forward and backward (contract in attention.h), written
// once over simd.h's Vec and stamped per ISA (attention.cpp: scalar; stamp_avx2.cpp,
// stamp_avx512.cpp). Entry points attention_fwd_tiled / attention_bwd_tiled; helpers have
// internal linkage and no std:: templates are used, so the copies cannot be merged across ISAs.
//
// Tiles: kBr query rows x kBc keys. Inner products are register-blocked micro-kernels
// (kMR rows x kNV vectors of accumulators): C[M,N] (+)= A[M,K] B[K,N], A read by broadcast with
// arbitrary strides (so P^T and dS^T need no transpose), B row-major with N a multiple of the
// vector width. Operands are repacked (keys padded to a tile multiple, head dim to the vector
// width) so every B operand is contiguous: forward V [Tp, hdp] per kv head and Q^T per query
// tile; backward K^T, V^T (tile-major) per kv head, Q, dO per query head.
//
// Forward: task = (b, h, query tile), OpenMP dynamic schedule. It computes S^T = K Q^T (keys x
//   queries), so the online softmax (base 2: p = 2^(s * scale * log2e - m)) runs down columns
//   with the running max/sum of 16 queries in one vector, no horizontal reductions; then
//   O += P V. Key tiles outside the causal window / other documents are skipped, tiles
//   straddling the mask boundary get an element mask (-inf before the exp), and their tile
//   products skip the register blocks wholly outside the causal/window band (Band): about half
//   of each diagonal tile, so the work tracks the visible pairs (3% less at full causal, 6% at
//   window 1024, T 2048).
// Cost (hd 64, see bench/results/attention_loss.md): ~80-85% of the forward's time and ~85-90%
//   of the backward's is in micro() (near the FMA peak on AVX2); the backward does 5 tile
//   products per tile pair (S recomputed) where the FLOP convention credits 4.
// Same bits on every ISA (docs/invariance.md): each output element's sums run over p in order
//   (micro's fmadd), the softmax runs per query lane, 2^x is simd.h's vexp2 and the log vlog2.
// Backward: task = (b, kv head): for each query head of the group, for each key tile j, for each
//   query tile i that can see it: S = Q K^T, P = 2^(S c - lse_2), dV_j += P^T dO, dP = dO V^T,
//   dS = P (dP - D) scale, dK_j += dS^T Q, dQ_i += dS K. Every output row is owned by one task
//   and summed in a fixed order: deterministic and independent of the thread count.
#pragma once
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/attention.h"
#include "kernels/scratch.h"
#include "kernels/attention_tiles.h"
#include "kernels/simd.h"

#define OLMO_ATTENTION_BODY_DECLS                                                              \
  void attention_fwd_tiled(const AttnShape& s, const float* q, const float* k, const float* v, \
                           const int32_t* doc_ids, float* out, float* lse);                    \
  void attention_bwd_tiled(const AttnShape& s, const float* q, const float* k, const float* v, \
                           const int32_t* doc_ids, const float* out, const float* lse,         \
                           const float* dout, float* dq, float* dk, float* dv);

namespace olmo::kernels {
OLMO_FOR_EACH_ISA(OLMO_ATTENTION_BODY_DECLS)

namespace OLMO_ISA_NS {
namespace {

// Register blocking: MR rows x NV vectors of accumulators (+ NV B vectors + 1 broadcast).
// AVX2: 6 x 2 (15 of 16 ymm); 4 x 3 and 128 x 128 tiles measured no faster (attention_loss.md).
constexpr int kMR = Vec::W == 16 ? 6 : Vec::W == 8 ? 6 : 4;
constexpr int kNV = Vec::W == 16 ? 4 : Vec::W == 8 ? 2 : 4;
constexpr bool kTail55 = Vec::W == 8 && kMR == 6;
constexpr bool kPackKFwd = Vec::W == 8;  // forward packs K (see attention_fwd_tiled)
constexpr float kLog2eF = 1.4426950408889634f;
constexpr float kLn2F = 0.6931471805599453f;



// Tile buffers: per-thread slots of kernels/scratch.h, reused by every call on the thread (no page
// faults in the steady state; bounded by the largest call: ~8 * T * hd floats per thread for
// the backward, plus a copy of V on the calling thread for the forward). Slots 0..11: the tiles,
// 12: the calling thread's V copy.
inline float* scratch(int slot, int64_t n) { return ::olmo::scratch<float>(attn_scratch(slot), n); }

// C[MR, NV*W] (+)= sum_p A[r*sai + p*sap] * B[p*ldb + 0 .. NV*W).
// AVX2: always inlined into tile_gemm (with tile_gemm's direct call of the full block below,
// a 64 x 64 x 64 tile_gemm on Zen 2 went from 93 to 100 GFLOP/s in an L1-resident loop; the
// out-of-line micro reached through two jump tables ran its same inner loop ~7% slower).
#if OLMO_SIMD_BYTES == 32
#define OLMO_ATTN_MICRO_INLINE __attribute__((always_inline))
#else
#define OLMO_ATTN_MICRO_INLINE
#endif
template <int MR, int NV>
OLMO_ATTN_MICRO_INLINE inline void micro(int64_t K, const float* A, int64_t sai, int64_t sap,
                                         const float* B, int64_t ldb, float* C, int64_t ldc,
                                         bool acc) {
  constexpr int W = Vec::W;
  Vec::R c[MR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) c[r][v] = acc ? Vec::load(C + r * ldc + v * W) : Vec::zero();
  for (int64_t p = 0; p < K; ++p) {
    Vec::R b[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) b[v] = Vec::load(B + p * ldb + v * W);
    const float* a = A + p * sap;
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const Vec::R ar = Vec::set1(a[r * sai]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) c[r][v] = Vec::fmadd(ar, b[v], c[r][v]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) Vec::store(C + r * ldc + v * W, c[r][v]);
}

template <int MR>
inline void micro_nv(int nv, int64_t K, const float* A, int64_t sai, int64_t sap, const float* B,
                     int64_t ldb, float* C, int64_t ldc, bool acc) {
  static_assert(kNV >= 2 && kNV <= 4);
  switch (nv) {
    case 1: micro<MR, 1>(K, A, sai, sap, B, ldb, C, ldc, acc); break;
    case 2: micro<MR, 2>(K, A, sai, sap, B, ldb, C, ldc, acc); break;
    case 3: micro<MR, (kNV >= 3 ? 3 : 1)>(K, A, sai, sap, B, ldb, C, ldc, acc); break;
    default: micro<MR, kNV>(K, A, sai, sap, B, ldb, C, ldc, acc); break;
  }
}

// The causal/window band of a tile pair that straddles the mask edge (classify_window == 2):
// query i sees key j iff j <= i and (w <= 0 or i - j < w). Row m of C is position m_abs + m (a
// query if m_query, else a key); the other index x (C's column, or A's p) is position x_abs + x.
// krange: A is exactly zero outside the band (P, dS), so each row block multiplies only the p
// range it can see (the skipped terms would add exact zeros); otherwise (S, dP) whole row x
// column blocks outside the band are not computed (the mask overwrites them, or they meet P = 0).
struct Band {
  int64_t m_abs, x_abs, w;
  bool m_query, krange;
};

// The visible range [lo, hi] of x for rows [a, b] of C.
inline void band_range(const Band& bd, int64_t a, int64_t b, int64_t* lo, int64_t* hi) {
  constexpr int64_t kFar = int64_t(1) << 40;
  a += bd.m_abs, b += bd.m_abs;
  *lo = (bd.m_query ? (bd.w > 0 ? a - bd.w + 1 : -kFar) : a) - bd.x_abs;
  *hi = (bd.m_query ? b : (bd.w > 0 ? b + bd.w - 1 : kFar)) - bd.x_abs;
}

// C[M, N] (+)= A[M, K] B[K, N] with A(i, p) = A[i*sai + p*sap]; N % Vec::W == 0. band: null,
// or the tile's mask band (work outside it skipped, see Band).
void tile_gemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t sai, int64_t sap,
               const float* B, int64_t ldb, float* C, int64_t ldc, bool acc,
               const Band* band = nullptr) {
  constexpr int W = Vec::W;
  for (int64_t n0 = 0; n0 < N; n0 += kNV * W) {
    const int nv = static_cast<int>(imin(kNV, (N - n0) / W));
    for (int64_t m0 = 0, mr = 0; m0 < M; m0 += mr) {
      // AVX2 (FMA latency 5 on Zen 2): a 4-row tail block has 8 accumulators, too few to cover
      // the latency (77% of the peak in isolation vs 98% for 5 rows), so 10 rows left are
      // done as 5 + 5 instead of 6 + 4 (64 = 9 * 6 + 2 * 5). Row results are unchanged.
      mr = kTail55 && M - m0 == 10 ? 5 : imin(kMR, M - m0);
      int64_t k0 = 0, k1 = K;
      if (band) {
        int64_t lo, hi;
        band_range(*band, m0, m0 + mr - 1, &lo, &hi);
        if (band->krange) {
          k0 = imax(0, lo), k1 = imin(K, hi + 1);
          if (k1 <= k0) continue;
        } else if (hi < n0 || lo >= n0 + nv * W) {
          continue;
        }
      }
      const float* a = A + m0 * sai + k0 * sap;
      const float* b = B + n0 + k0 * ldb;
      float* c = C + m0 * ldc + n0;
      const int64_t kk = k1 - k0;
      if (Vec::W == 8 && mr == kMR && nv == kNV) {  // AVX2: the full block without the switches
        micro<kMR, kNV>(kk, a, sai, sap, b, ldb, c, ldc, acc);
        continue;
      }
      switch (mr) {
        case 1: micro_nv<1>(nv, kk, a, sai, sap, b, ldb, c, ldc, acc); break;
        case 2: micro_nv<2>(nv, kk, a, sai, sap, b, ldb, c, ldc, acc); break;
        case 3: micro_nv<3>(nv, kk, a, sai, sap, b, ldb, c, ldc, acc); break;
        case 4: micro_nv<4>(nv, kk, a, sai, sap, b, ldb, c, ldc, acc); break;
        case 5: micro_nv<(kMR >= 5 ? 5 : 1)>(nv, kk, a, sai, sap, b, ldb, c, ldc, acc); break;
        default: micro_nv<kMR>(nv, kk, a, sai, sap, b, ldb, c, ldc, acc); break;
      }
    }
  }
}

// K^T in tile-major order, kt[(jt * hd + p) * kBc + c] = k[key jt*kBc + c][p] (zero padded), so
// each key tile's [hd, kBc] block is one contiguous 16 KB run (a row stride of T floats would
// put every row of the block in the same L1 set).
// AVX2: whole 8 x 8 blocks go through registers (the element loop's 64 scattered scalar stores
// per key were ~20% of the backward's own time for KV 12 on Zen 2); same values either way.
void pack_kt(const float* k, int64_t T, int64_t KV, int64_t hd, int64_t Tp, int64_t g,
             float* kt) {
  for (int64_t j0 = 0; j0 < Tp; j0 += kBc) {
    float* blk = kt + j0 * hd;
    int64_t c = 0;
#if OLMO_SIMD_BYTES == 32
    if (hd % 8 == 0)
      for (; c + 8 <= kBc && j0 + c + 8 <= T; c += 8) {
        const float* src = k + ((j0 + c) * KV + g) * hd;
        for (int64_t p = 0; p < hd; p += 8)
          Vec::transpose8(src + p, KV * hd, blk + p * kBc + c, kBc);
      }
#endif
    for (; c < kBc; ++c) {
      const int64_t t = j0 + c;
      if (t < T) {
        const float* src = k + (t * KV + g) * hd;
        for (int64_t p = 0; p < hd; ++p) blk[p * kBc + c] = src[p];
      } else {
        for (int64_t p = 0; p < hd; ++p) blk[p * kBc + c] = 0.0f;
      }
    }
  }
}
// xp[t, 0..hdp) = x[t * stride + 0..hd), zero padded to hdp columns and Tp rows.
void pack_rows(const float* x, int64_t T, int64_t stride, int64_t hd, int64_t Tp, int64_t hdp,
               float* xp) {
  for (int64_t t = 0; t < T; ++t) {
    memcpy(xp + t * hdp, x + t * stride, sizeof(float) * hd);
    if (hdp > hd) memset(xp + t * hdp + hd, 0, sizeof(float) * (hdp - hd));
  }
  if (Tp > T) memset(xp + T * hdp, 0, sizeof(float) * (Tp - T) * hdp);
}

}  // namespace

void attention_fwd_tiled(const AttnShape& s, const float* q, const float* k, const float* v,
                         const int32_t* doc_ids, float* out, float* lse) {
  constexpr int W = Vec::W;
  const int64_t B = s.B, T = s.T, H = s.H, KV = s.KV, hd = s.hd, G = H / KV, w = s.window;
  const int64_t Tp = round_up(T, kBc), hdp = round_up(hd, W), nt = (T + kBr - 1) / kBr;
  const float c = static_cast<float>(1.0 / sqrt(static_cast<double>(hd))) * kLog2eF;
  // V rows repacked contiguously per kv head (a row stride of KV*hd floats would alias in L1),
  // in the calling thread's scratch slot 12 (the workers use slots 0..5). On AVX2 K too (kpf,
  // after V in the same slot): read in place, a K tile's 64 rows at a stride of KV*hd floats
  // fall into 16 of the 64 sets of a 32 KiB L1 and miss on each of the 4 column passes of
  // S^T = K Q^T (Zen 2: that product at 90.5 vs 98.9 GFLOP/s with K packed, T 2048, KV 12).
  const int64_t nkv = B * KV * Tp * hdp;
  float* vp = scratch(12, kPackKFwd ? 2 * nkv : nkv);
  float* kpf = kPackKFwd ? vp + nkv : nullptr;
#pragma omp parallel for schedule(static)
  for (int64_t bg = 0; bg < B * KV; ++bg) {
    const int64_t b = bg / KV, g = bg % KV;
    pack_rows(v + (b * T * KV + g) * hd, T, KV * hd, hd, Tp, hdp, vp + bg * Tp * hdp);
    if (kPackKFwd)
      pack_rows(k + (b * T * KV + g) * hd, T, KV * hd, hd, Tp, hdp, kpf + bg * Tp * hdp);
  }
#pragma omp parallel
  {
    // S^T tile [kBc keys, kBr queries]: the softmax runs down columns, so the running max/sum
    // of 16 queries live in one vector and no horizontal reductions are needed.
    float* St = scratch(0, kBc * kBr);
    float* O = scratch(1, kBr * hdp);
    float* Qt = scratch(2, hd * kBr);  // Q tile transposed [hd, kBr], zero padded
    float* m = scratch(3, kBr);        // running max, log2 units
    float* l = scratch(4, kBr);        // running sum
    float* alpha = scratch(5, kBr);    // per-tile rescale
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < B * H * nt; ++task) {
      // Largest tiles (latest queries) first for better balance.
      const int64_t it = nt - 1 - task % nt, h = (task / nt) % H, b = task / (nt * H);
      const int64_t i0 = it * kBr, rows = imin(kBr, T - i0), i1 = i0 + rows;
      const int64_t g = h / G, bg = b * KV + g;
      const int32_t* doc = doc_ids ? doc_ids + b * T : nullptr;
      for (int64_t r = 0; r < kBr; ++r) {
        const float* qr = q + ((b * T + i0 + r) * H + h) * hd;
        for (int64_t x = 0; x < hd; ++x) Qt[x * kBr + r] = r < rows ? qr[x] : 0.0f;
      }
      memset(O, 0, sizeof(float) * kBr * hdp);
      for (int64_t r = 0; r < kBr; ++r) m[r] = -INFINITY, l[r] = 0.0f;
      const int64_t jstart = w > 0 ? imax(0, i0 - w + 1) / kBc * kBc : 0;
      for (int64_t j0 = jstart; j0 < i1; j0 += kBc) {
        const int cw = classify_window(i0, i1, j0, j0 + kBc, w);
        if (cw == 0) continue;
        const int cd = classify_docs(doc, i0, i1, j0, imin(j0 + kBc, T));
        if (cd == 0) continue;
        const int64_t kr = imin(kBc, T - j0);
        const Band kq{j0, i0, w, false, false}, qk{i0, j0, w, true, true};
        const float* ktile =
            kPackKFwd ? kpf + (bg * Tp + j0) * hdp : k + ((b * T + j0) * KV + g) * hd;
        tile_gemm(kr, kBr, hd, ktile, kPackKFwd ? hdp : KV * hd, 1, Qt, kBr, St, kBr, false,
                  cw == 2 ? &kq : nullptr);
        for (int64_t x = kr * kBr; x < kBc * kBr; ++x) St[x] = -INFINITY;
        if (cw == 2 || cd == 2) apply_mask_t(St, kr, rows, i0, j0, w, doc, cd == 2);
        const Vec::R cv = Vec::set1(c), lowest = Vec::set1(-3.0e38f);
        for (int64_t x = 0; x < kBr; x += W) {
          Vec::R mx = Vec::load(St + x);
          for (int64_t r = 1; r < kBc; ++r) mx = Vec::max(mx, Vec::load(St + r * kBr + x));
          const Vec::R mold = Vec::load(m + x);
          const Vec::R mnew = Vec::max(mold, Vec::mul(mx, cv));
          // Columns with nothing visible yet keep mnew = -inf; the finite stand-in makes their
          // p = 2^-inf = 0 and alpha = 0 instead of NaN.
          const Vec::R nm = Vec::sub(Vec::zero(), Vec::max(mnew, lowest));
          const Vec::R a = vexp2(Vec::add(mold, nm));
          Vec::R sum = Vec::zero();
          for (int64_t r = 0; r < kBc; ++r) {
            const Vec::R p = vexp2(Vec::fmadd(Vec::load(St + r * kBr + x), cv, nm));
            Vec::store(St + r * kBr + x, p);
            sum = Vec::add(sum, p);
          }
          Vec::store(l + x, Vec::fmadd(Vec::load(l + x), a, sum));
          Vec::store(m + x, mnew);
          Vec::store(alpha + x, a);
        }
        for (int64_t r = 0; r < rows; ++r) {
          if (alpha[r] == 1.0f) continue;
          const Vec::R av = Vec::set1(alpha[r]);
          for (int64_t x = 0; x < hdp; x += W)
            Vec::store(O + r * hdp + x, Vec::mul(av, Vec::load(O + r * hdp + x)));
        }
        tile_gemm(rows, hdp, kBc, St, 1, kBr, vp + (bg * Tp + j0) * hdp, hdp, O, hdp, true,
                  cw == 2 ? &qk : nullptr);
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

void attention_bwd_tiled(const AttnShape& s, const float* q, const float* k, const float* v,
                         const int32_t* doc_ids, const float* out, const float* lse,
                         const float* dout, float* dq, float* dk, float* dv) {
  constexpr int W = Vec::W;
  const int64_t B = s.B, T = s.T, H = s.H, KV = s.KV, hd = s.hd, G = H / KV, w = s.window;
  const int64_t Tp = round_up(T, kBc), hdp = round_up(hd, W);
  const float scale = static_cast<float>(1.0 / sqrt(static_cast<double>(hd)));
  const float c = scale * kLog2eF;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t bg = 0; bg < B * KV; ++bg) {
    const int64_t b = bg / KV, g = bg % KV;
    const int32_t* doc = doc_ids ? doc_ids + b * T : nullptr;
    float* kt = scratch(0, hd * Tp);
    float* vt = scratch(1, hd * Tp);
    float* kp = scratch(2, Tp * hdp);
    float* qp = scratch(3, Tp * hdp);
    float* dop = scratch(4, Tp * hdp);
    float* dqb = scratch(5, Tp * hdp);
    float* dkb = scratch(6, Tp * hdp);
    float* dvb = scratch(7, Tp * hdp);
    float* P = scratch(8, kBr * kBc);
    float* dS = scratch(9, kBr * kBc);
    // dP blocks outside an edge tile's band are skipped and keep older (finite) values, which
    // meet P = 0 there: start from zeros, never from uninitialised memory.
    memset(dS, 0, sizeof(float) * kBr * kBc);
    float* D = scratch(10, Tp);
    float* L2 = scratch(11, Tp);
    memset(dkb, 0, sizeof(float) * Tp * hdp);
    memset(dvb, 0, sizeof(float) * Tp * hdp);
    pack_kt(k + b * T * KV * hd, T, KV, hd, Tp, g, kt);
    pack_kt(v + b * T * KV * hd, T, KV, hd, Tp, g, vt);
    pack_rows(k + (b * T * KV + g) * hd, T, KV * hd, hd, Tp, hdp, kp);
    for (int64_t h = g * G; h < (g + 1) * G; ++h) {
      pack_rows(q + (b * T * H + h) * hd, T, H * hd, hd, Tp, hdp, qp);
      pack_rows(dout + (b * T * H + h) * hd, T, H * hd, hd, Tp, hdp, dop);
      memset(dqb, 0, sizeof(float) * Tp * hdp);
      // D[t] = dO_t . O_t, each a sequential sum over x; 8 rows at once so the 8 dependency
      // chains overlap (the same operations in the same order as one row at a time).
      for (int64_t t0 = 0; t0 < T; t0 += 8) {
        const int64_t nr = imin(8, T - t0);
        float d[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        const float* o[8];
        for (int64_t r = 0; r < 8; ++r) o[r] = out + ((b * T + t0 + imin(r, nr - 1)) * H + h) * hd;
        for (int64_t x = 0; x < hd; ++x)
#pragma GCC unroll 8
          for (int64_t r = 0; r < 8; ++r) d[r] += dop[(t0 + imin(r, nr - 1)) * hdp + x] * o[r][x];
        for (int64_t r = 0; r < nr; ++r) {
          D[t0 + r] = d[r];
          L2[t0 + r] = lse[(b * H + h) * T + t0 + r] * kLog2eF;
        }
      }
      for (int64_t j0 = 0; j0 < T; j0 += kBc) {
        const int64_t iend = w > 0 ? imin(T, j0 + kBc - 1 + w) : T;
        for (int64_t i0 = j0; i0 < iend; i0 += kBr) {
          const int64_t rows = imin(kBr, T - i0), i1 = i0 + rows;
          const int cw = classify_window(i0, i1, j0, j0 + kBc, w);
          if (cw == 0) continue;
          const int cd = classify_docs(doc, i0, i1, j0, imin(j0 + kBc, T));
          if (cd == 0) continue;
          // Bands: S and dP (query rows, key columns: blocks), dV and dK (key rows, query p),
          // dQ (query rows, key p).
          const Band qs{i0, j0, w, true, false}, kp_{j0, i0, w, false, true},
              qp_{i0, j0, w, true, true};
          const bool edge = cw == 2;
          tile_gemm(rows, kBc, hd, qp + i0 * hdp, hdp, 1, kt + j0 * hd, kBc, P, kBc, false,
                    edge ? &qs : nullptr);
          if (cw == 2 || cd == 2) apply_mask(P, rows, i0, j0, w, doc, cd == 2);
          const Vec::R cv = Vec::set1(c);
          for (int64_t r = 0; r < rows; ++r) {
            const Vec::R nl = Vec::set1(-L2[i0 + r]);
            for (int64_t x = 0; x < kBc; x += W)
              Vec::store(P + r * kBc + x,
                         vexp2(Vec::fmadd(Vec::load(P + r * kBc + x), cv, nl)));
          }
          tile_gemm(kBc, hdp, rows, P, 1, kBc, dop + i0 * hdp, hdp, dvb + j0 * hdp, hdp, true,
                    edge ? &kp_ : nullptr);
          tile_gemm(rows, kBc, hd, dop + i0 * hdp, hdp, 1, vt + j0 * hd, kBc, dS, kBc, false,
                    edge ? &qs : nullptr);
          const Vec::R sv = Vec::set1(scale);
          for (int64_t r = 0; r < rows; ++r) {
            const Vec::R dr = Vec::set1(D[i0 + r]);
            for (int64_t x = 0; x < kBc; x += W) {
              const Vec::R p = Vec::load(P + r * kBc + x);
              const Vec::R t = Vec::mul(Vec::sub(Vec::load(dS + r * kBc + x), dr), sv);
              Vec::store(dS + r * kBc + x, Vec::mul(p, t));
            }
          }
          tile_gemm(kBc, hdp, rows, dS, 1, kBc, qp + i0 * hdp, hdp, dkb + j0 * hdp, hdp, true,
                    edge ? &kp_ : nullptr);
          tile_gemm(rows, hdp, kBc, dS, kBc, 1, kp + j0 * hdp, hdp, dqb + i0 * hdp, hdp, true,
                    edge ? &qp_ : nullptr);
        }
      }
      for (int64_t t = 0; t < T; ++t)
        memcpy(dq + ((b * T + t) * H + h) * hd, dqb + t * hdp, sizeof(float) * hd);
    }
    for (int64_t t = 0; t < T; ++t) {
      memcpy(dk + ((b * T + t) * KV + g) * hd, dkb + t * hdp, sizeof(float) * hd);
      memcpy(dv + ((b * T + t) * KV + g) * hd, dvb + t * hdp, sizeof(float) * hd);
    }
  }
}

}  // namespace OLMO_ISA_NS
}  // namespace olmo::kernels
