// gemm_micro_bf16's native path (contract and arithmetic in gemm_micro.h): the packing and the
// register tile on VDPBF16PS, for gemm_micro.cpp's loop nest. Compiled with -mavx512bf16 (the
// _avx512bf16.cpp suffix) and called only when kernels::cpu_has_bf16(); a single-ISA file like
// attention_bf16_avx512bf16.cpp (the instruction exists nowhere else). The emulation every other
// ISA runs (micro_pack_*_dot, micro_macro_dot in gemm_micro_body.h) gives the same bits.
//
// Layouts (MR = 6 rows, NR = 64 columns = 4 zmm; depth in pairs q = 0 .. kp/2 - 1, kp = kc
// rounded up to even, the pad zero):
//   packed A block: sliver s (MR rows) at (uint32_t*)Ap + s * MR * kp/2, pair (r, q) at
//                   [q * MR + r] = bf16 A(r, 2q) | bf16 A(r, 2q+1) << 16; rows past mc are 0.
//   packed B panel: sliver s (NR columns) at (uint32_t*)Bp + s * NR * kp/2, pair (q, c) at
//                   [q * NR + c] = bf16 B(2q, c) | bf16 B(2q+1, c) << 16; columns past nc are 0.
// The tile keeps MR x 4 zmm accumulators (24 of 32) and per pair step loads 4 zmm of B and
// broadcasts MR pairs of A: 24 VDPBF16PS (48 bf16 multiply-adds per lane) per 4 loads.
// Epilogue: gemm_micro_tile's (one fmadd / mul per element, the same Vec operations).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels/gemm_bf16_native.h"

namespace olmo::kernels::isa_avx512bf16 {

namespace {
constexpr int kMR = 6, kNV = 4, kNR = 16 * kNV;

inline uint32_t pair(uint16_t lo, uint16_t hi) { return uint32_t(lo) | uint32_t(hi) << 16; }

// One MR x NR tile from a packed A sliver and a packed B sliver of kq pair steps; m, n valid.
void tile(int64_t kq, const uint32_t* Ap, const uint32_t* Bp, float* C, int64_t ldc, int64_t m,
          int64_t n, float alpha, float beta, bool first) {
  for (int64_t r = 0; r < m; ++r) {
    __builtin_prefetch(C + r * ldc, 1, 3);
    __builtin_prefetch(C + r * ldc + n - 1, 1, 3);
  }
  __m512 c[kMR][kNV];
#pragma GCC unroll 6
  for (int r = 0; r < kMR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < kNV; ++v) c[r][v] = _mm512_setzero_ps();
#pragma GCC unroll 2
  for (int64_t q = 0; q < kq; ++q) {
    __m512bh b[kNV];
#pragma GCC unroll 4
    for (int v = 0; v < kNV; ++v) b[v] = (__m512bh)_mm512_loadu_si512(Bp + q * kNR + v * 16);
#pragma GCC unroll 6
    for (int r = 0; r < kMR; ++r) {
      const __m512bh a = (__m512bh)_mm512_set1_epi32(int(Ap[q * kMR + r]));
#pragma GCC unroll 4
      for (int v = 0; v < kNV; ++v) c[r][v] = _mm512_dpbf16_ps(c[r][v], a, b[v]);
    }
  }
  const bool full = m == kMR && n == kNR;
  const bool read_c = !first || beta != 0.0f;
  float tmp[kMR * kNR];
  float* d = C;
  int64_t ld = ldc;
  if (!full) {
    memset(tmp, 0, sizeof tmp);
    if (read_c)
      for (int64_t r = 0; r < m; ++r) memcpy(tmp + r * kNR, C + r * ldc, size_t(n) * 4);
    d = tmp;
    ld = kNR;
  }
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 6
  for (int r = 0; r < kMR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < kNV; ++v) {
      float* p = d + r * ld + v * 16;
      __m512 x;
      if (!first) x = _mm512_fmadd_ps(va, c[r][v], _mm512_loadu_ps(p));
      else if (beta == 0.0f) x = _mm512_mul_ps(va, c[r][v]);
      else x = _mm512_fmadd_ps(va, c[r][v], _mm512_mul_ps(vb, _mm512_loadu_ps(p)));
      _mm512_storeu_ps(p, x);
    }
  if (!full)
    for (int64_t r = 0; r < m; ++r) memcpy(C + r * ldc, tmp + r * kNR, size_t(n) * 4);
}
// dst[q * ldd + c] = the 32-bit pair at src + c * lds + 2q, for c, q < 16 (lds in bf16): a 16 x 16
// transpose of 32-bit elements in registers.
inline void transpose16(const uint16_t* src, int64_t lds, uint32_t* dst, int64_t ldd) {
  __m512i r[16], t[16];
  for (int c = 0; c < 16; ++c) r[c] = _mm512_loadu_si512(src + c * lds);
  for (int c = 0; c < 16; c += 2) {
    t[c] = _mm512_unpacklo_epi32(r[c], r[c + 1]);
    t[c + 1] = _mm512_unpackhi_epi32(r[c], r[c + 1]);
  }
  for (int c = 0; c < 16; c += 4) {
    r[c] = _mm512_unpacklo_epi64(t[c], t[c + 2]);
    r[c + 1] = _mm512_unpackhi_epi64(t[c], t[c + 2]);
    r[c + 2] = _mm512_unpacklo_epi64(t[c + 1], t[c + 3]);
    r[c + 3] = _mm512_unpackhi_epi64(t[c + 1], t[c + 3]);
  }
  // r[4g + k] now holds, in each 128-bit lane l, elements q = 4l + k of rows 4g .. 4g+3.
  const __m512i lo = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0);
  const __m512i hi = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);
  for (int k = 0; k < 4; ++k) {
    const __m512i a = _mm512_permutex2var_epi64(r[k], lo, r[4 + k]);
    const __m512i b = _mm512_permutex2var_epi64(r[k], hi, r[4 + k]);
    const __m512i c = _mm512_permutex2var_epi64(r[8 + k], lo, r[12 + k]);
    const __m512i d = _mm512_permutex2var_epi64(r[8 + k], hi, r[12 + k]);
    // a: lanes (l0 rows 0-3, l0 rows 4-7, l1 rows 0-3, l1 rows 4-7); c likewise rows 8-15.
    const __m512i q0 = _mm512_shuffle_i64x2(a, c, 0x44), q1 = _mm512_shuffle_i64x2(a, c, 0xee);
    const __m512i q2 = _mm512_shuffle_i64x2(b, d, 0x44), q3 = _mm512_shuffle_i64x2(b, d, 0xee);
    _mm512_storeu_si512(dst + (0 + k) * ldd, q0);
    _mm512_storeu_si512(dst + (4 + k) * ldd, q1);
    _mm512_storeu_si512(dst + (8 + k) * ldd, q2);
    _mm512_storeu_si512(dst + (12 + k) * ldd, q3);
  }
}
}  // namespace

int64_t gemm_dot_nr() { return kNR; }

void gemm_dot_pack_a(bool ta, const uint16_t* A, int64_t lda, int64_t i0, int64_t mc,
                     int64_t p0, int64_t kc, float* Ap) {
  const int64_t kq = (kc + 1) / 2;
  uint32_t* out = reinterpret_cast<uint32_t*>(Ap);
  auto at = [&](int64_t i, int64_t p) -> uint16_t {
    if (p >= kc) return 0;
    return ta ? A[(p0 + p) * lda + i] : A[i * lda + p0 + p];
  };
  for (int64_t s = 0; s * kMR < mc; ++s) {
    uint32_t* dst = out + s * kMR * kq;
    const int64_t m = mc - s * kMR < kMR ? mc - s * kMR : kMR;
    if (!ta && m == kMR && kc % 2 == 0) {  // six row streams, a pair per load
      for (int r = 0; r < kMR; ++r) {
        const uint16_t* src = A + (i0 + s * kMR + r) * lda + p0;
        for (int64_t q = 0; q < kq; ++q) {
          uint32_t x;
          memcpy(&x, src + 2 * q, 4);
          dst[q * kMR + r] = x;
        }
      }
      continue;
    }
    for (int64_t q = 0; q < kq; ++q)
      for (int64_t r = 0; r < kMR; ++r) {
        const int64_t i = i0 + s * kMR + r;
        dst[q * kMR + r] = r < m ? pair(at(i, 2 * q), at(i, 2 * q + 1)) : 0u;
      }
  }
}

void gemm_dot_pack_b(bool tb, const uint16_t* B, int64_t ldb, int64_t p0, int64_t kc, int64_t j0,
                     int64_t nc, float* Bp) {
  const int64_t kq = (kc + 1) / 2;
  uint32_t* out = reinterpret_cast<uint32_t*>(Bp);
  for (int64_t s = 0; s * kNR < nc; ++s) {
    uint32_t* dst = out + s * kNR * kq;
    const int64_t c0 = j0 + s * kNR;
    const int64_t n = nc - s * kNR < kNR ? nc - s * kNR : kNR;
    if (!tb) {  // rows 2q and 2q+1 of B interleaved, 32 columns per step
      const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9,
                                           24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17,
                                           1, 16, 0);
      for (int64_t q = 0; q < kq; ++q) {
        const uint16_t* r0 = B + (p0 + 2 * q) * ldb + c0;
        const bool has1 = 2 * q + 1 < kc;
        for (int64_t c = 0; c < kNR; c += 16) {
          const int64_t w = n - c;
          const __mmask16 mk = w >= 16 ? __mmask16(0xffff) : w <= 0 ? 0 : __mmask16((1u << w) - 1);
          const __m256i lo = _mm256_maskz_loadu_epi16(mk, r0 + c);
          const __m256i hi = has1 ? _mm256_maskz_loadu_epi16(mk, r0 + ldb + c) : _mm256_setzero_si256();
          const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
          _mm512_storeu_si512(dst + q * kNR + c, _mm512_permutexvar_epi16(idx, both));
        }
      }
    } else {  // B[j * ldb + p]: 16 columns x 16 pairs transposed at a time, then the rest
      const int64_t q16 = kc / 32 * 16, c16 = n / 16 * 16;
      for (int64_t c = 0; c < c16; c += 16)
        for (int64_t q = 0; q < q16; q += 16)
          transpose16(B + (c0 + c) * ldb + p0 + 2 * q, ldb, dst + q * kNR + c, kNR);
      for (int64_t c = 0; c < kNR; ++c) {
        const int64_t qs = c < c16 ? q16 : 0;  // pairs already written for this column
        if (c >= n) {
          for (int64_t q = 0; q < kq; ++q) dst[q * kNR + c] = 0u;
          continue;
        }
        const uint16_t* src = B + (c0 + c) * ldb + p0;
        for (int64_t q = qs; q < kc / 2; ++q) {
          uint32_t x;
          memcpy(&x, src + 2 * q, 4);
          dst[q * kNR + c] = x;
        }
        if (kc % 2) dst[(kq - 1) * kNR + c] = src[kc - 1];
      }
    }
  }
}

void gemm_dot_macro(int64_t mc, int64_t nc, int64_t kq, const float* Ap, const float* Bp,
                    float alpha, float beta, bool first, float* C, int64_t ldc) {
  const uint32_t* A = reinterpret_cast<const uint32_t*>(Ap);
  const uint32_t* B = reinterpret_cast<const uint32_t*>(Bp);
  for (int64_t jr = 0; jr < nc; jr += kNR) {
    const int64_t n = nc - jr < kNR ? nc - jr : kNR;
    for (int64_t ir = 0; ir < mc; ir += kMR) {
      const int64_t m = mc - ir < kMR ? mc - ir : kMR;
      tile(kq, A + ir * kq, B + jr * kq, C + ir * ldc + jr, ldc, m, n, alpha, beta, first);
    }
  }
}

}  // namespace olmo::kernels::isa_avx512bf16
