// The bf16 attention kernels (contract and rounding points in attention_bf16.h) on AVX512_BF16:
// the fp32 kernels' flash tiling (attention_body.h: 64 x 64 tiles, online softmax down the
// columns of S^T, masked tiles skipped, edge tiles element-masked, deterministic threading) with
// every tile product a VDPBF16PS register tile. Compiled with -mavx512bf16 (the _avx512bf16.cpp
// suffix) and called only when cpu_has_bf16(); a single-ISA kernel like peak_bf16_avx512bf16.cpp
// (the instruction exists nowhere else), written with intrinsics, with simd.h's AVX-512 Vec and
// vexp2 for the softmax.
//
// Micro-kernel: C[M, N] (+)= A[M, K] B[K, N] over K/2 pair steps: VDPBF16PS multiplies bf16
// pairs (k, k+1) of a broadcast A element pair by 16 pairs of B and adds both products into an
// fp32 lane. So A is read as 32-bit pairs adjacent along K (any row/pair strides), and B is
// stored "pair-interleaved" ([K/2][N][2] bf16, one 64-byte row per pair step). Operands per
// product (-> A pairs along, B layout):
//   forward  S^T = K Q^T:      K~ rows (pairs along hd), Q~ tile transposed by 32-bit pairs
//            O += P V:         P~ pairs along keys (written by the softmax), V~ interleaved by key
//   backward S = Q K^T:        Q~ rows, K~^T per key tile;   dP = dO V^T: dO~ rows, V~^T per tile
//            dV += P^T dO:     P~ pairs along queries, dO~ interleaved by query
//            dK += dS^T Q:     dS~ pairs along queries, Q~ interleaved by query
//            dQ += dS K:       dS~ rows (pairs along keys), K~ interleaved by key
// Rounding: VCVTNEPS2BF16 (RNE, denormals to zero) for inputs and for P, dS; the integer running
// max (base 2) makes the forward's alpha rescale exact and P's rounding tile-order independent.
// Scratch: per-thread byte slabs of kernels/scratch.h (attention slots; the fp32 and bf16 kernels
// never run at once on a thread): forward ~0.1 MB per thread plus K~, V~ of every kv head on the
// calling thread (4 * B * KV * T * hd bytes); backward ~36 * T * hd bytes per thread.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/scratch.h"
#include "kernels/attention.h"
#include "kernels/attention_tiles.h"
#include "kernels/simd.h"

namespace olmo::kernels {
namespace isa_avx512bf16 {
void attention_fwd_bf16(const AttnShape& s, const float* q, const float* k, const float* v,
                        const int32_t* doc_ids, float* out, float* lse);
void attention_bwd_bf16(const AttnShape& s, const float* q, const float* k, const float* v,
                        const int32_t* doc_ids, const float* out, const float* lse,
                        const float* dout, float* dq, float* dk, float* dv);
}  // namespace isa_avx512bf16

namespace OLMO_ISA_NS {  // isa_avx512 here; internal linkage for everything below
namespace {

constexpr int kMR = 6, kNV = 4;  // 24 accumulators + 4 B vectors + 1 broadcast
constexpr float kLog2eF = 1.4426950408889634f;
constexpr float kLn2F = 0.6931471805599453f;

inline __m256i bf16x16(__m512 x) { return (__m256i)_mm512_cvtneps_pbh(x); }

// 32 bf16: (bf16(a[i]), bf16(b[i])) for i = 0..15, i.e. two rows interleaved into pairs.
inline __m512i pack_pairs(__m512 a, __m512 b) {
  const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9,
                                       24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1,
                                       16, 0);
  return _mm512_permutexvar_epi16(idx, (__m512i)_mm512_cvtne2ps_pbh(b, a));
}

// src[0..n) as 16 floats (zero beyond n; src may be null when n <= 0).
inline __m512 load16(const float* src, int64_t n) {
  if (n >= 16) return _mm512_loadu_ps(src);
  if (n <= 0) return _mm512_setzero_ps();
  return _mm512_maskz_loadu_ps(__mmask16((1u << n) - 1u), src);
}

// dst[0..hdp) = bf16(src[0..hd)), zero padded (src null: all zero). hdp % 16 == 0.
inline void cvt_row(const float* src, int64_t hd, int64_t hdp, uint16_t* dst) {
  for (int64_t x = 0; x < hdp; x += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + x),
                        bf16x16(src ? load16(src + x, hd - x) : _mm512_setzero_ps()));
}

// Rows [0, Tp) of x (row t at x + t * stride, t < T; zero beyond) rounded into xb [Tp, hdp].
void cvt_rows(const float* x, int64_t T, int64_t stride, int64_t hd, int64_t Tp, int64_t hdp,
              uint16_t* xb) {
  for (int64_t t = 0; t < Tp; ++t) cvt_row(t < T ? x + t * stride : nullptr, hd, hdp, xb + t * hdp);
}

// xb [Tp, hdp] -> interleaved by row pairs: xv[(t/2) * hdp + c] = (xb[t][c], xb[t+1][c]).
void interleave_rows(const uint16_t* xb, int64_t Tp, int64_t hdp, uint32_t* xv) {
  for (int64_t t = 0; t < Tp; t += 2)
    for (int64_t c = 0; c < hdp; ++c)
      xv[(t / 2) * hdp + c] = uint32_t(xb[t * hdp + c]) | (uint32_t(xb[(t + 1) * hdp + c]) << 16);
}

// xb [Tp, hdp] -> per key tile j0, its [hdp/2, kBc] block of 32-bit pairs transposed:
// xt[j0 * hdp/2 + p * kBc + c] = pair p of row j0 + c (one contiguous 8 KB block per tile at
// hd 64).
void transpose_pairs(const uint16_t* xb, int64_t Tp, int64_t hdp, uint32_t* xt) {
  const int64_t hh = hdp / 2;
  const uint32_t* x32 = reinterpret_cast<const uint32_t*>(xb);
  for (int64_t j0 = 0; j0 < Tp; j0 += kBc)
    for (int64_t c = 0; c < kBc; ++c)
      for (int64_t p = 0; p < hh; ++p) xt[j0 * hh + p * kBc + c] = x32[(j0 + c) * hh + p];
}

// C[MR, NV*16] (+)= sum_{p < KP} pairs A[r*sai + p*sap] . B[p*ldb + 0 .. NV*32) (bf16 units).
template <int MR, int NV>
inline void micro(int64_t KP, const uint32_t* A, int64_t sai, int64_t sap, const uint16_t* B,
                  int64_t ldb, float* C, int64_t ldc, bool acc) {
  __m512 c[MR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      c[r][v] = acc ? _mm512_loadu_ps(C + r * ldc + v * 16) : _mm512_setzero_ps();
  for (int64_t p = 0; p < KP; ++p) {
    __m512bh b[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) b[v] = (__m512bh)_mm512_loadu_si512(B + p * ldb + v * 32);
    const uint32_t* a = A + p * sap;
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512bh ar = (__m512bh)_mm512_set1_epi32(int(a[r * sai]));
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) c[r][v] = _mm512_dpbf16_ps(c[r][v], ar, b[v]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) _mm512_storeu_ps(C + r * ldc + v * 16, c[r][v]);
}

template <int MR>
inline void micro_nv(int nv, int64_t KP, const uint32_t* A, int64_t sai, int64_t sap,
                     const uint16_t* B, int64_t ldb, float* C, int64_t ldc, bool acc) {
  switch (nv) {
    case 1: micro<MR, 1>(KP, A, sai, sap, B, ldb, C, ldc, acc); break;
    case 2: micro<MR, 2>(KP, A, sai, sap, B, ldb, C, ldc, acc); break;
    case 3: micro<MR, 3>(KP, A, sai, sap, B, ldb, C, ldc, acc); break;
    default: micro<MR, kNV>(KP, A, sai, sap, B, ldb, C, ldc, acc); break;
  }
}

// C[M, N] (+)= A[M, 2KP] B[2KP, N], A(i, pair p) = A[i*sai + p*sap], B pair-interleaved with
// ldb bf16 per pair step; N % 16 == 0.
void tile_gemm(int64_t M, int64_t N, int64_t KP, const uint32_t* A, int64_t sai, int64_t sap,
               const uint16_t* B, int64_t ldb, float* C, int64_t ldc, bool acc) {
  for (int64_t n0 = 0; n0 < N; n0 += kNV * 16) {
    const int nv = static_cast<int>(imin(kNV, (N - n0) / 16));
    for (int64_t m0 = 0; m0 < M; m0 += kMR) {
      const uint32_t* a = A + m0 * sai;
      const uint16_t* b = B + 2 * n0;
      float* c = C + m0 * ldc + n0;
      switch (imin(kMR, M - m0)) {
        case 1: micro_nv<1>(nv, KP, a, sai, sap, b, ldb, c, ldc, acc); break;
        case 2: micro_nv<2>(nv, KP, a, sai, sap, b, ldb, c, ldc, acc); break;
        case 3: micro_nv<3>(nv, KP, a, sai, sap, b, ldb, c, ldc, acc); break;
        case 4: micro_nv<4>(nv, KP, a, sai, sap, b, ldb, c, ldc, acc); break;
        case 5: micro_nv<5>(nv, KP, a, sai, sap, b, ldb, c, ldc, acc); break;
        default: micro_nv<kMR>(nv, KP, a, sai, sap, b, ldb, c, ldc, acc); break;
      }
    }
  }
}

// A per-thread byte slab carved into 64-byte aligned arrays.
struct Slab {
  char* p;
  template <class T>
  T* take(int64_t n) {
    T* r = reinterpret_cast<T*>(p);
    p += round_up(n * int64_t(sizeof(T)), 64);
    return r;
  }
};
inline int64_t bytes64(int64_t n, int64_t size) { return round_up(n * size, 64); }
inline char* slab(int slot, int64_t bytes) {
  return ::olmo::scratch<char>(attn_scratch(slot), bytes);
}

}  // namespace
}  // namespace OLMO_ISA_NS

namespace isa_avx512bf16 {
using namespace ::olmo::kernels::OLMO_ISA_NS;

void attention_fwd_bf16(const AttnShape& s, const float* q, const float* k, const float* v,
                        const int32_t* doc_ids, float* out, float* lse) {
  const int64_t B = s.B, T = s.T, H = s.H, KV = s.KV, hd = s.hd, G = H / KV, w = s.window;
  const int64_t Tp = round_up(T, kBc), hdp = round_up(hd, 16), hh = hdp / 2;
  const int64_t nt = (T + kBr - 1) / kBr;
  const float c = static_cast<float>(1.0 / sqrt(static_cast<double>(hd))) * kLog2eF;
  // K~ rows [Tp, hdp] and V~ interleaved by key pairs [Tp/2, hdp] per kv head, on the calling
  // thread's slot 12 (workers use slot 0).
  uint16_t* kb = reinterpret_cast<uint16_t*>(slab(12, 4 * B * KV * Tp * hdp));
  uint32_t* vv = reinterpret_cast<uint32_t*>(kb + B * KV * Tp * hdp);
#pragma omp parallel for schedule(static)
  for (int64_t bg = 0; bg < B * KV; ++bg) {
    const int64_t b = bg / KV, g = bg % KV;
    cvt_rows(k + (b * T * KV + g) * hd, T, KV * hd, hd, Tp, hdp, kb + bg * Tp * hdp);
    const float* vs = v + (b * T * KV + g) * hd;
    for (int64_t t = 0; t < Tp; t += 2)
      for (int64_t x = 0; x < hdp; x += 16) {
        const __m512 r0 = t < T ? load16(vs + t * KV * hd + x, hd - x) : _mm512_setzero_ps();
        const __m512 r1 =
            t + 1 < T ? load16(vs + (t + 1) * KV * hd + x, hd - x) : _mm512_setzero_ps();
        _mm512_storeu_si512(vv + (bg * Tp + t) / 2 * hdp + x, pack_pairs(r0, r1));
      }
  }
  const uint32_t* kb32 = reinterpret_cast<const uint32_t*>(kb);
#pragma omp parallel
  {
    Slab sl{slab(0, bytes64(kBc * kBr, 4) + bytes64(kBr * hdp, 4) + bytes64(hh * kBr, 4) +
                        bytes64(kBc / 2 * kBr, 4) + 3 * bytes64(kBr, 4) + bytes64(hdp, 2))};
    float* St = sl.take<float>(kBc * kBr);      // S^T tile [keys, queries]
    float* O = sl.take<float>(kBr * hdp);       // output accumulator
    uint32_t* Qv = sl.take<uint32_t>(hh * kBr);  // Q~ tile by pairs, transposed [hdp/2, kBr]
    uint32_t* Pb = sl.take<uint32_t>(kBc / 2 * kBr);  // P~ pairs along keys [kBc/2, kBr]
    float* m = sl.take<float>(kBr);             // running max: integer, log2 units
    float* l = sl.take<float>(kBr);             // running sum
    float* alpha = sl.take<float>(kBr);         // per-tile rescale: a power of two
    uint16_t* row = sl.take<uint16_t>(hdp);
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < B * H * nt; ++task) {
      const int64_t it = nt - 1 - task % nt, h = (task / nt) % H, b = task / (nt * H);
      const int64_t i0 = it * kBr, rows = imin(kBr, T - i0), i1 = i0 + rows;
      const int64_t g = h / G, bg = b * KV + g;
      const int32_t* doc = doc_ids ? doc_ids + b * T : nullptr;
      const uint32_t* row32 = reinterpret_cast<const uint32_t*>(row);
      for (int64_t r = 0; r < kBr; ++r) {
        cvt_row(r < rows ? q + ((b * T + i0 + r) * H + h) * hd : nullptr, hd, hdp, row);
        for (int64_t p = 0; p < hh; ++p) Qv[p * kBr + r] = row32[p];
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
        tile_gemm(kr, kBr, hh, kb32 + (bg * Tp + j0) * hh, hh, 1,
                  reinterpret_cast<const uint16_t*>(Qv), 2 * kBr, St, kBr, false);
        for (int64_t x = kr * kBr; x < kBc * kBr; ++x) St[x] = -INFINITY;
        if (cw == 2 || cd == 2) apply_mask_t(St, kr, rows, i0, j0, w, doc, cd == 2);
        const __m512 cv = _mm512_set1_ps(c), lowest = _mm512_set1_ps(-3.0e38f);
        for (int64_t x = 0; x < kBr; x += 16) {
          __m512 mx = _mm512_loadu_ps(St + x);
          for (int64_t r = 1; r < kBc; ++r)
            mx = _mm512_max_ps(mx, _mm512_loadu_ps(St + r * kBr + x));
          const __m512 mold = _mm512_loadu_ps(m + x);
          const __m512 mtile = _mm512_roundscale_ps(_mm512_mul_ps(mx, cv),
                                                    _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC);
          const __m512 mnew = _mm512_max_ps(mold, mtile);
          // Columns with nothing visible yet keep mnew = -inf; the finite stand-in gives p = 0
          // and alpha = 0 instead of NaN.
          const __m512 nm = _mm512_sub_ps(_mm512_setzero_ps(), _mm512_max_ps(mnew, lowest));
          const __m512 a = vexp2(_mm512_add_ps(mold, nm));
          __m512 sum = _mm512_setzero_ps();
          for (int64_t r = 0; r < kBc; r += 2) {
            const __m512 p0 = vexp2(_mm512_fmadd_ps(_mm512_loadu_ps(St + r * kBr + x), cv, nm));
            const __m512 p1 =
                vexp2(_mm512_fmadd_ps(_mm512_loadu_ps(St + (r + 1) * kBr + x), cv, nm));
            sum = _mm512_add_ps(_mm512_add_ps(sum, p0), p1);
            _mm512_storeu_si512(Pb + (r / 2) * kBr + x, pack_pairs(p0, p1));
          }
          _mm512_storeu_ps(l + x, _mm512_fmadd_ps(_mm512_loadu_ps(l + x), a, sum));
          _mm512_storeu_ps(m + x, mnew);
          _mm512_storeu_ps(alpha + x, a);
        }
        for (int64_t r = 0; r < rows; ++r) {
          if (alpha[r] == 1.0f) continue;
          const __m512 av = _mm512_set1_ps(alpha[r]);
          for (int64_t x = 0; x < hdp; x += 16)
            _mm512_storeu_ps(O + r * hdp + x, _mm512_mul_ps(av, _mm512_loadu_ps(O + r * hdp + x)));
        }
        tile_gemm(rows, hdp, kBc / 2, Pb, 1, kBr,
                  reinterpret_cast<const uint16_t*>(vv + (bg * Tp + j0) / 2 * hdp), 2 * hdp, O,
                  hdp, true);
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

void attention_bwd_bf16(const AttnShape& s, const float* q, const float* k, const float* v,
                        const int32_t* doc_ids, const float* out, const float* lse,
                        const float* dout, float* dq, float* dk, float* dv) {
  const int64_t B = s.B, T = s.T, H = s.H, KV = s.KV, hd = s.hd, G = H / KV, w = s.window;
  const int64_t Tp = round_up(T, kBc), hdp = round_up(hd, 16), hh = hdp / 2;
  const float scale = static_cast<float>(1.0 / sqrt(static_cast<double>(hd)));
  const float c = scale * kLog2eF;
  const int64_t n = Tp * hdp, tile = kBr * kBc;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t bg = 0; bg < B * KV; ++bg) {
    const int64_t b = bg / KV, g = bg % KV;
    const int32_t* doc = doc_ids ? doc_ids + b * T : nullptr;
    Slab sl{slab(0, 4 * bytes64(n, 2) + 5 * bytes64(n / 2, 4) + 3 * bytes64(n, 4) +
                        2 * bytes64(tile, 4) + 2 * bytes64(tile / 2, 4) + bytes64(tile, 2) +
                        2 * bytes64(Tp, 4))};
    uint16_t* kb = sl.take<uint16_t>(n);    // K~ rows [Tp, hdp]
    uint16_t* vb = sl.take<uint16_t>(n);    // V~ rows
    uint16_t* qb = sl.take<uint16_t>(n);    // Q~ rows (this head)
    uint16_t* gb = sl.take<uint16_t>(n);    // dO~ rows (this head)
    uint32_t* kt = sl.take<uint32_t>(n / 2);  // K~^T per key tile (B of S)
    uint32_t* vt = sl.take<uint32_t>(n / 2);  // V~^T per key tile (B of dP)
    uint32_t* kv = sl.take<uint32_t>(n / 2);  // K~ interleaved by keys (B of dQ)
    uint32_t* qv = sl.take<uint32_t>(n / 2);  // Q~ interleaved by queries (B of dK)
    uint32_t* gv = sl.take<uint32_t>(n / 2);  // dO~ interleaved by queries (B of dV)
    float* dqb = sl.take<float>(n);
    float* dkb = sl.take<float>(n);
    float* dvb = sl.take<float>(n);
    float* P = sl.take<float>(tile);   // [rows, kBc]
    float* dS = sl.take<float>(tile);  // [rows, kBc]
    uint32_t* Pq = sl.take<uint32_t>(tile / 2);   // P~ pairs along queries [kBr/2, kBc]
    uint32_t* dSq = sl.take<uint32_t>(tile / 2);  // dS~ pairs along queries
    uint16_t* dSk = sl.take<uint16_t>(tile);      // dS~ rows [rows, kBc] (pairs along keys)
    float* D = sl.take<float>(Tp);
    float* L2 = sl.take<float>(Tp);
    const uint32_t* qb32 = reinterpret_cast<const uint32_t*>(qb);
    const uint32_t* gb32 = reinterpret_cast<const uint32_t*>(gb);
    const uint32_t* dSk32 = reinterpret_cast<const uint32_t*>(dSk);
    memset(dkb, 0, sizeof(float) * n);
    memset(dvb, 0, sizeof(float) * n);
    cvt_rows(k + (b * T * KV + g) * hd, T, KV * hd, hd, Tp, hdp, kb);
    cvt_rows(v + (b * T * KV + g) * hd, T, KV * hd, hd, Tp, hdp, vb);
    transpose_pairs(kb, Tp, hdp, kt);
    transpose_pairs(vb, Tp, hdp, vt);
    interleave_rows(kb, Tp, hdp, kv);
    for (int64_t h = g * G; h < (g + 1) * G; ++h) {
      cvt_rows(q + (b * T * H + h) * hd, T, H * hd, hd, Tp, hdp, qb);
      cvt_rows(dout + (b * T * H + h) * hd, T, H * hd, hd, Tp, hdp, gb);
      interleave_rows(qb, Tp, hdp, qv);
      interleave_rows(gb, Tp, hdp, gv);
      memset(dqb, 0, sizeof(float) * n);
      for (int64_t t = 0; t < T; ++t) {
        const float* o = out + ((b * T + t) * H + h) * hd;
        float d = 0.0f;
        for (int64_t x = 0; x < hd; ++x) {
          const uint32_t u = uint32_t(gb[t * hdp + x]) << 16;
          float gx;
          memcpy(&gx, &u, 4);
          d += gx * o[x];
        }
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
          tile_gemm(rows, kBc, hh, qb32 + i0 * hh, hh, 1,
                    reinterpret_cast<const uint16_t*>(kt + j0 * hh), 2 * kBc, P, kBc, false);
          if (cw == 2 || cd == 2) apply_mask(P, rows, i0, j0, w, doc, cd == 2);
          const __m512 cv = _mm512_set1_ps(c);
          for (int64_t r = 0; r < rows; ++r) {
            const __m512 nl = _mm512_set1_ps(-L2[i0 + r]);
            for (int64_t x = 0; x < kBc; x += 16)
              _mm512_storeu_ps(P + r * kBc + x,
                               vexp2(_mm512_fmadd_ps(_mm512_loadu_ps(P + r * kBc + x), cv, nl)));
          }
          for (int64_t r = 0; r < rows; r += 2)
            for (int64_t x = 0; x < kBc; x += 16) {
              const __m512 p1 = r + 1 < rows ? _mm512_loadu_ps(P + (r + 1) * kBc + x)
                                             : _mm512_setzero_ps();
              _mm512_storeu_si512(Pq + (r / 2) * kBc + x,
                                  pack_pairs(_mm512_loadu_ps(P + r * kBc + x), p1));
            }
          tile_gemm(kBc, hdp, rp, Pq, 1, kBc, reinterpret_cast<const uint16_t*>(gv + i0 / 2 * hdp),
                    2 * hdp, dvb + j0 * hdp, hdp, true);
          tile_gemm(rows, kBc, hh, gb32 + i0 * hh, hh, 1,
                    reinterpret_cast<const uint16_t*>(vt + j0 * hh), 2 * kBc, dS, kBc, false);
          const __m512 sv = _mm512_set1_ps(scale);
          for (int64_t r = 0; r < rows; ++r) {
            const __m512 dr = _mm512_set1_ps(D[i0 + r]);
            for (int64_t x = 0; x < kBc; x += 16) {
              const __m512 p = _mm512_loadu_ps(P + r * kBc + x);
              const __m512 t =
                  _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(dS + r * kBc + x), dr), sv);
              const __m512 ds = _mm512_mul_ps(p, t);
              _mm512_storeu_ps(dS + r * kBc + x, ds);
              _mm256_storeu_si256(reinterpret_cast<__m256i*>(dSk + r * kBc + x), bf16x16(ds));
            }
          }
          for (int64_t r = 0; r < rows; r += 2)
            for (int64_t x = 0; x < kBc; x += 16) {
              const __m512 d1 = r + 1 < rows ? _mm512_loadu_ps(dS + (r + 1) * kBc + x)
                                             : _mm512_setzero_ps();
              _mm512_storeu_si512(dSq + (r / 2) * kBc + x,
                                  pack_pairs(_mm512_loadu_ps(dS + r * kBc + x), d1));
            }
          tile_gemm(kBc, hdp, rp, dSq, 1, kBc, reinterpret_cast<const uint16_t*>(qv + i0 / 2 * hdp),
                    2 * hdp, dkb + j0 * hdp, hdp, true);
          tile_gemm(rows, hdp, kBc / 2, dSk32, kBc / 2, 1,
                    reinterpret_cast<const uint16_t*>(kv + j0 / 2 * hdp), 2 * hdp,
                    dqb + i0 * hdp, hdp, true);
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

}  // namespace isa_avx512bf16
}  // namespace olmo::kernels
