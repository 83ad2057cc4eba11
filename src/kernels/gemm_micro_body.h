// Internal: the loops of gemm_micro (contract in gemm_micro.h), written once over simd.h's Vec and
// stamped per ISA (gemm_micro.cpp: scalar; stamp_avx2.cpp, stamp_avx512.cpp).
//
// Layouts (MR = 6 rows, NR = 2 * Vec::W columns: 6 x 16 on AVX2, 6 x 32 on AVX-512, 6 x 2 scalar):
//   packed A block: ceil(mc / MR) slivers, sliver s at Ap + s * MR * kc, element (r, p) at
//                   [p * MR + r]; rows past mc are 0.
//   packed B panel: ceil(nc / NR) slivers, sliver s at Bp + s * NR * kc, element (p, c) at
//                   [p * NR + c]; columns past nc are 0.
// The tile keeps MR x 2 Vec accumulators (12 ymm of the 16 on AVX2) and per k step loads two
// Vec of B and broadcasts MR values of A: 12 FMAs per 8 loads, FMA-bound on Zen 2 / Haswell.
// Summation order of one C element: p = 0 .. kc-1 in order inside the tile, then one fmadd into
// C per kc block, blocks in K order. It depends on kc only (not on mc, nc, the tile's position
// or the thread that runs it): the same bits for any thread count.
#pragma once
#include <stdint.h>
#include <string.h>

#include "kernels/simd.h"

#define OLMO_GEMM_MICRO_BODY_DECLS                                                              \
  /* Columns of the register tile (NR) of this ISA's copy. */                                   \
  int64_t micro_nr();                                                                           \
  /* Packs op(A)[i0 : i0 + mc, p0 : p0 + kc] (gemm.h's op) into the packed A layout. */        \
  void micro_pack_a(bool ta, const float* A, int64_t lda, int64_t i0, int64_t mc, int64_t p0,  \
                    int64_t kc, float* Ap);                                                     \
  /* Packs op(B)[p0 : p0 + kc, j0 : j0 + nc] into the packed B layout. */                       \
  void micro_pack_b(bool tb, const float* B, int64_t ldb, int64_t p0, int64_t kc, int64_t j0,  \
                    int64_t nc, float* Bp);                                                     \
  /* The same from bf16 (uint16_t) for gemm_micro_bf16's emulation of VDPBF16PS: widened,    */ \
  /* denormals read as zero, the depth's pairs (2q, 2q+1) swapped (odd first) and padded to  */ \
  /* an even depth with zeros: kc + (kc & 1) packed steps.                                    */ \
  void micro_pack_a_dot(bool ta, const uint16_t* A, int64_t lda, int64_t i0, int64_t mc,       \
                        int64_t p0, int64_t kc, float* Ap);                                     \
  void micro_pack_b_dot(bool tb, const uint16_t* B, int64_t ldb, int64_t p0, int64_t kc,       \
                        int64_t j0, int64_t nc, float* Bp);                                     \
  /* C[0:mc, 0:nc] (row stride ldc) = alpha * Ap Bp + (first ? beta * C : C); beta == 0 with */ \
  /* first: C is not read. */                                                                   \
  void micro_macro(int64_t mc, int64_t nc, int64_t kc, const float* Ap, const float* Bp,        \
                   float alpha, float beta, bool first, float* C, int64_t ldc);                 \
  /* The same with every accumulation flushed to zero where denormal (Vec::ftz): on the      */ \
  /* micro_pack_*_dot operands, VDPBF16PS's arithmetic (gemm_micro.h).                        */ \
  void micro_macro_dot(int64_t mc, int64_t nc, int64_t kc, const float* Ap, const float* Bp,    \
                       float alpha, float beta, bool first, float* C, int64_t ldc);

namespace olmo::kernels {
OLMO_FOR_EACH_ISA(OLMO_GEMM_MICRO_BODY_DECLS)

namespace OLMO_ISA_NS {

namespace {
constexpr int kGemmMR = 6;
constexpr int kGemmNR = 2 * Vec::W;

// One MR x NR tile of C (m <= MR valid rows, n <= NR valid columns) from a packed A sliver and a
// packed B sliver of depth kc. Edge tiles run the same arithmetic on a copy in a local buffer.
// Ftz: each accumulation flushed to zero where denormal (the emulation of VDPBF16PS).
template <bool Ftz>
inline void gemm_micro_tile(int64_t kc, const float* Ap, const float* Bp, float* C, int64_t ldc,
                       int64_t m, int64_t n, float alpha, float beta, bool first) {
  constexpr int W = Vec::W;
  // C's lines are needed only after the kc-long loop: fetch them now (C may be in L3 or DRAM,
  // e.g. the LM head's 100352-row weight gradient), first and last float of each row's span.
  for (int64_t r = 0; r < m; ++r) {
    __builtin_prefetch(C + r * ldc, 1, 3);
    __builtin_prefetch(C + r * ldc + n - 1, 1, 3);
  }
  Vec::R c[kGemmMR][2];
#pragma GCC unroll 6
  for (int r = 0; r < kGemmMR; ++r) c[r][0] = c[r][1] = Vec::zero();
#pragma GCC unroll 4
  for (int64_t p = 0; p < kc; ++p) {
    const Vec::R b0 = Vec::load(Bp + p * kGemmNR), b1 = Vec::load(Bp + p * kGemmNR + W);
#pragma GCC unroll 6
    for (int r = 0; r < kGemmMR; ++r) {
      const Vec::R a = Vec::set1(Ap[p * kGemmMR + r]);
      c[r][0] = Vec::fmadd(a, b0, c[r][0]);
      c[r][1] = Vec::fmadd(a, b1, c[r][1]);
      if constexpr (Ftz) c[r][0] = Vec::ftz(c[r][0]), c[r][1] = Vec::ftz(c[r][1]);
    }
  }
  const bool full = m == kGemmMR && n == kGemmNR;
  const bool read_c = !first || beta != 0.0f;
  float tmp[kGemmMR * kGemmNR];
  float* d = C;
  int64_t ld = ldc;
  if (!full) {
    memset(tmp, 0, sizeof tmp);
    if (read_c)
      for (int64_t r = 0; r < m; ++r)
        memcpy(tmp + r * kGemmNR, C + r * ldc, size_t(n) * sizeof(float));
    d = tmp;
    ld = kGemmNR;
  }
  const Vec::R va = Vec::set1(alpha), vb = Vec::set1(beta);
#pragma GCC unroll 6
  for (int r = 0; r < kGemmMR; ++r)
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      float* q = d + r * ld + h * W;
      Vec::R v;
      if (!first) v = Vec::fmadd(va, c[r][h], Vec::load(q));
      else if (beta == 0.0f) v = Vec::mul(va, c[r][h]);
      else v = Vec::fmadd(va, c[r][h], Vec::mul(vb, Vec::load(q)));
      Vec::store(q, v);
    }
  if (!full)
    for (int64_t r = 0; r < m; ++r)
      memcpy(C + r * ldc, tmp + r * kGemmNR, size_t(n) * sizeof(float));
}
}  // namespace

int64_t micro_nr() { return kGemmNR; }

namespace {
// A packed operand's element: fp32 as is.
inline float widen1(float x) { return x; }
inline void widen_copy(float* d, const float* s, int64_t n) { memcpy(d, s, size_t(n) * 4); }

// Prefetches (into L2) the n elements at src + ahead: integer address arithmetic, since the span
// may lie past the operand's end (prefetches do not fault). Changes no value.
template <class T>
inline void prefetch_span(const T* src, int64_t ahead, int64_t n) {
  const uintptr_t a = uintptr_t(src) + uintptr_t(ahead) * sizeof(T);
  for (int64_t q = 0; q < n; q += 64 / int64_t(sizeof(T)))
    __builtin_prefetch(reinterpret_cast<const void*>(a + uintptr_t(q) * sizeof(T)), 0, 2);
}

#if defined(__AVX512F__)
// Sixteen depth steps of one full A sliver, op(A) not transposed: six fp32 rows of 16
// contiguous values (src[r] + p) into the packed order dst[p * 6 + r] (96 floats), by register
// permutes instead of 96 scalar moves: row pairs interleaved (64-bit units (r, r+1) per p),
// then the three pair streams interleaved. Moves values only.
inline void pack6x16(const float* const* src, int64_t p, float* dst) {
  const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15,
                                       31);
  __m512d pr[2][3];  // [half][pair]: (r, r+1) for 8 depth steps as 64-bit units
  for (int q = 0; q < 3; ++q) {
    const __m512 a = _mm512_loadu_ps(src[2 * q] + p), b = _mm512_loadu_ps(src[2 * q + 1] + p);
    pr[0][q] = _mm512_castps_pd(_mm512_permutex2var_ps(a, lo, b));
    pr[1][q] = _mm512_castps_pd(_mm512_permutex2var_ps(a, hi, b));
  }
  // out = A0 B0 C0 A1 B1 C1 ... A7 B7 C7 (A, B, C: the pairs (0,1), (2,3), (4,5)) in 3 vectors;
  // an index i < 8 takes the first operand's unit i, 8 + i the second's (0: unused slot).
  const __m512i ab0 = _mm512_setr_epi64(0, 8, 0, 1, 9, 0, 2, 10);
  const __m512i c0 = _mm512_setr_epi64(0, 1, 8, 3, 4, 9, 6, 7);
  const __m512i ab1 = _mm512_setr_epi64(0, 3, 11, 0, 4, 12, 0, 5);
  const __m512i c1 = _mm512_setr_epi64(10, 1, 2, 11, 4, 5, 12, 7);
  const __m512i ab2 = _mm512_setr_epi64(13, 0, 6, 14, 0, 7, 15, 0);
  const __m512i c2 = _mm512_setr_epi64(0, 13, 2, 3, 14, 5, 6, 15);
  for (int h = 0; h < 2; ++h) {
    const __m512d A = pr[h][0], B = pr[h][1], C = pr[h][2];
    double* d = reinterpret_cast<double*>(dst + h * 48);
    _mm512_storeu_pd(d, _mm512_permutex2var_pd(_mm512_permutex2var_pd(A, ab0, B), c0, C));
    _mm512_storeu_pd(d + 8, _mm512_permutex2var_pd(_mm512_permutex2var_pd(A, ab1, B), c1, C));
    _mm512_storeu_pd(d + 16, _mm512_permutex2var_pd(_mm512_permutex2var_pd(A, ab2, B), c2, C));
  }
}
#endif

template <class T>
void pack_a(bool ta, const T* A, int64_t lda, int64_t i0, int64_t mc, int64_t p0, int64_t kc,
            float* Ap) {
  const int64_t full = mc / kGemmMR;  // whole slivers
  if (ta && full > 0) {  // row by row: each row of A's block read in order (one stream)
    for (int64_t p = 0; p < kc; ++p) {
      const T* src = A + (p0 + p) * lda + i0;
      prefetch_span(src, mc, mc);  // the same row's next mc block (this thread's next block)
      for (int64_t s = 0; s < full; ++s)
        widen_copy(Ap + s * kGemmMR * kc + p * kGemmMR, src + s * kGemmMR, kGemmMR);
    }
    if (full * kGemmMR == mc) return;
    pack_a(ta, A, lda, i0 + full * kGemmMR, mc - full * kGemmMR, p0, kc, Ap + full * kGemmMR * kc);
    return;
  }
  for (int64_t s = 0; s * kGemmMR < mc; ++s) {
    float* dst = Ap + s * kGemmMR * kc;
    const int64_t r0 = i0 + s * kGemmMR;
    const int64_t m = mc - s * kGemmMR < kGemmMR ? mc - s * kGemmMR : kGemmMR;
    if (ta) {  // op(A)[i, p] = A[p * lda + i]: MR contiguous values per p
      for (int64_t p = 0; p < kc; ++p) {
        const T* src = A + (p0 + p) * lda + r0;
        for (int64_t r = 0; r < kGemmMR; ++r) dst[p * kGemmMR + r] = r < m ? widen1(src[r]) : 0.0f;
      }
    } else {  // op(A)[i, p] = A[i * lda + p]: MR row streams
      if (m == kGemmMR) {
        const T* src[kGemmMR];
        for (int r = 0; r < kGemmMR; ++r) src[r] = A + (r0 + r) * lda + p0;
        // each row's next kc block (the next one this thread packs from these rows): hundreds
        // of short row segments, e.g. the LM head's d/dlogits rows 100352 floats apart, defeat
        // the hardware prefetcher
        for (int r = 0; r < kGemmMR; ++r) prefetch_span(src[r], kc, kc);
        int64_t p = 0;
#if defined(__AVX512F__)
        if constexpr (sizeof(T) == sizeof(float))
          for (; p + 16 <= kc; p += 16) pack6x16(src, p, dst + p * kGemmMR);
#endif
        for (; p < kc; ++p)
#pragma GCC unroll 6
          for (int r = 0; r < kGemmMR; ++r) dst[p * kGemmMR + r] = widen1(src[r][p]);
      } else {
        for (int64_t p = 0; p < kc; ++p)
          for (int64_t r = 0; r < kGemmMR; ++r)
            dst[p * kGemmMR + r] = r < m ? widen1(A[(r0 + r) * lda + p0 + p]) : 0.0f;
      }
    }
  }
}

template <class T>
void pack_b(bool tb, const T* B, int64_t ldb, int64_t p0, int64_t kc, int64_t j0, int64_t nc,
            float* Bp) {
  const int64_t full = nc / kGemmNR;  // whole slivers
  if (!tb && full > 0) {  // row by row: B's rows are read in order (one stream per call)
    for (int64_t p = 0; p < kc; ++p) {
      const T* src = B + (p0 + p) * ldb + j0;
      for (int64_t s = 0; s < full; ++s) {
        widen_copy(Bp + s * kGemmNR * kc + p * kGemmNR, src + s * kGemmNR, kGemmNR);
      }
    }
    if (full * kGemmNR == nc) return;
    pack_b(tb, B, ldb, p0, kc, j0 + full * kGemmNR, nc - full * kGemmNR, Bp + full * kGemmNR * kc);
    return;
  }
  for (int64_t s = 0; s * kGemmNR < nc; ++s) {
    float* dst = Bp + s * kGemmNR * kc;
    const int64_t c0 = j0 + s * kGemmNR;
    const int64_t n = nc - s * kGemmNR < kGemmNR ? nc - s * kGemmNR : kGemmNR;
    if (!tb) {  // op(B)[p, j] = B[p * ldb + j]: NR contiguous values per p
      for (int64_t p = 0; p < kc; ++p) {
        const T* src = B + (p0 + p) * ldb + c0;
        float* d = dst + p * kGemmNR;
        if (n == kGemmNR) {
          widen_copy(d, src, kGemmNR);
        } else {
          for (int64_t c = 0; c < kGemmNR; ++c) d[c] = c < n ? widen1(src[c]) : 0.0f;
        }
      }
    } else {  // op(B)[p, j] = B[j * ldb + p]: read along p, write with stride NR
      for (int64_t c = 0; c < kGemmNR; ++c) {
        if (c < n) {
          const T* src = B + (c0 + c) * ldb + p0;
          // the same span of the row one sliver ahead: short row segments defeat the hardware
          // prefetcher (B may be the LM head's 100352 x 768 weight, far out of cache)
          // (integer address arithmetic: past B's end for the last sliver; prefetches do not
          // fault)
          const uintptr_t ahead = uintptr_t(src) + uintptr_t(kGemmNR * ldb) * sizeof(T);
          for (int64_t p = 0; p < kc; p += 64 / int64_t(sizeof(T)))
            __builtin_prefetch(reinterpret_cast<const void*>(ahead + uintptr_t(p) * sizeof(T)), 0, 3);
          for (int64_t p = 0; p < kc; ++p) dst[p * kGemmNR + c] = widen1(src[p]);
        } else {
          for (int64_t p = 0; p < kc; ++p) dst[p * kGemmNR + c] = 0.0f;
        }
      }
    }
  }
}

// The operands of the VDPBF16PS emulation (micro_pack_*_dot): op(X)'s depth index p read as
// p ^ 1 (pairs swapped), zero at p ^ 1 >= kc (the even-depth pad), bf16 denormals as zero.
inline float widen_daz(uint16_t x) {
  const uint32_t u = uint32_t((x & 0x7f80u) == 0 ? (x & 0x8000u) : x) << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

void pack_a_dot(bool ta, const uint16_t* A, int64_t lda, int64_t i0, int64_t mc, int64_t p0,
                int64_t kc, float* Ap) {
  const int64_t kp = kc + (kc & 1);
  for (int64_t s = 0; s * kGemmMR < mc; ++s) {
    float* dst = Ap + s * kGemmMR * kp;
    const int64_t m = mc - s * kGemmMR < kGemmMR ? mc - s * kGemmMR : kGemmMR;
    for (int64_t p = 0; p < kp; ++p) {
      const int64_t q = p ^ 1;
      for (int64_t r = 0; r < kGemmMR; ++r) {
        const int64_t i = i0 + s * kGemmMR + r;
        dst[p * kGemmMR + r] =
            r < m && q < kc ? widen_daz(ta ? A[(p0 + q) * lda + i] : A[i * lda + p0 + q]) : 0.0f;
      }
    }
  }
}

void pack_b_dot(bool tb, const uint16_t* B, int64_t ldb, int64_t p0, int64_t kc, int64_t j0,
                int64_t nc, float* Bp) {
  const int64_t kp = kc + (kc & 1);
  for (int64_t s = 0; s * kGemmNR < nc; ++s) {
    float* dst = Bp + s * kGemmNR * kp;
    const int64_t n = nc - s * kGemmNR < kGemmNR ? nc - s * kGemmNR : kGemmNR;
    for (int64_t p = 0; p < kp; ++p) {
      const int64_t q = p ^ 1;
      for (int64_t c = 0; c < kGemmNR; ++c) {
        const int64_t j = j0 + s * kGemmNR + c;
        dst[p * kGemmNR + c] =
            c < n && q < kc ? widen_daz(tb ? B[j * ldb + p0 + q] : B[(p0 + q) * ldb + j]) : 0.0f;
      }
    }
  }
}

template <bool Ftz>
void macro(int64_t mc, int64_t nc, int64_t kc, const float* Ap, const float* Bp, float alpha,
           float beta, bool first, float* C, int64_t ldc) {
  for (int64_t jr = 0; jr < nc; jr += kGemmNR) {
    const int64_t n = nc - jr < kGemmNR ? nc - jr : kGemmNR;
    for (int64_t ir = 0; ir < mc; ir += kGemmMR) {
      const int64_t m = mc - ir < kGemmMR ? mc - ir : kGemmMR;
      gemm_micro_tile<Ftz>(kc, Ap + ir * kc, Bp + jr * kc, C + ir * ldc + jr, ldc, m, n, alpha,
                           beta, first);
    }
  }
}

}  // namespace

void micro_pack_a(bool ta, const float* A, int64_t lda, int64_t i0, int64_t mc, int64_t p0,
                  int64_t kc, float* Ap) {
  pack_a(ta, A, lda, i0, mc, p0, kc, Ap);
}
void micro_pack_b(bool tb, const float* B, int64_t ldb, int64_t p0, int64_t kc, int64_t j0,
                  int64_t nc, float* Bp) {
  pack_b(tb, B, ldb, p0, kc, j0, nc, Bp);
}
void micro_pack_a_dot(bool ta, const uint16_t* A, int64_t lda, int64_t i0, int64_t mc,
                      int64_t p0, int64_t kc, float* Ap) {
  pack_a_dot(ta, A, lda, i0, mc, p0, kc, Ap);
}
void micro_pack_b_dot(bool tb, const uint16_t* B, int64_t ldb, int64_t p0, int64_t kc,
                      int64_t j0, int64_t nc, float* Bp) {
  pack_b_dot(tb, B, ldb, p0, kc, j0, nc, Bp);
}

void micro_macro(int64_t mc, int64_t nc, int64_t kc, const float* Ap, const float* Bp,
                 float alpha, float beta, bool first, float* C, int64_t ldc) {
  macro<false>(mc, nc, kc, Ap, Bp, alpha, beta, first, C, ldc);
}
void micro_macro_dot(int64_t mc, int64_t nc, int64_t kc, const float* Ap, const float* Bp,
                     float alpha, float beta, bool first, float* C, int64_t ldc) {
  macro<true>(mc, nc, kc, Ap, Bp, alpha, beta, first, C, ldc);
}

}  // namespace OLMO_ISA_NS
}  // namespace olmo::kernels
