// RMSNorm per-row kernels, AVX2 + FMA (8 floats per ymm, masked tail). Intrinsics only: no std::.
#include <immintrin.h>

#include "kernels/vec_kernels.h"

namespace olmo::kernels::isa_avx2 {

static inline __m256i tail_mask(int64_t rem) {
  int r = rem >= 8 ? 8 : int(rem);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(r), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
static inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

void rmsnorm_fwd_rows(const float* x, const float* w, float* y, float* rstd, int64_t n0,
                      int64_t n1, int64_t D, float eps) {
  for (int64_t n = n0; n < n1; ++n) {
    const float* xr = x + n * D;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(),
           a3 = _mm256_setzero_ps();
    int64_t d = 0;
    for (; d + 32 <= D; d += 32) {
      __m256 v0 = _mm256_loadu_ps(xr + d), v1 = _mm256_loadu_ps(xr + d + 8);
      __m256 v2 = _mm256_loadu_ps(xr + d + 16), v3 = _mm256_loadu_ps(xr + d + 24);
      a0 = _mm256_fmadd_ps(v0, v0, a0);
      a1 = _mm256_fmadd_ps(v1, v1, a1);
      a2 = _mm256_fmadd_ps(v2, v2, a2);
      a3 = _mm256_fmadd_ps(v3, v3, a3);
    }
    for (; d < D; d += 8) {
      __m256 v = _mm256_maskload_ps(xr + d, tail_mask(D - d));
      a0 = _mm256_fmadd_ps(v, v, a0);
    }
    float ss = hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    float r = 1.0f / __builtin_sqrtf(ss / float(D) + eps);
    rstd[n] = r;
    __m256 vr = _mm256_set1_ps(r);
    float* yr = y + n * D;
    for (d = 0; d < D; d += 8) {
      __m256i m = tail_mask(D - d);
      __m256 v = _mm256_maskload_ps(xr + d, m), vw = _mm256_maskload_ps(w + d, m);
      _mm256_maskstore_ps(yr + d, m, _mm256_mul_ps(vw, _mm256_mul_ps(v, vr)));
    }
  }
}

void rmsnorm_bwd_rows(const float* dy, const float* x, const float* w, const float* rstd,
                      float* dx, float* dw_part, int64_t n0, int64_t n1, int64_t D) {
  for (int64_t n = n0; n < n1; ++n) {
    const float* xr = x + n * D;
    const float* g = dy + n * D;
    float r = rstd[n];
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    int64_t d = 0;
    for (; d + 16 <= D; d += 16) {
      __m256 g0 = _mm256_mul_ps(_mm256_loadu_ps(w + d), _mm256_loadu_ps(g + d));
      __m256 g1 = _mm256_mul_ps(_mm256_loadu_ps(w + d + 8), _mm256_loadu_ps(g + d + 8));
      a0 = _mm256_fmadd_ps(g0, _mm256_loadu_ps(xr + d), a0);
      a1 = _mm256_fmadd_ps(g1, _mm256_loadu_ps(xr + d + 8), a1);
    }
    for (; d < D; d += 8) {
      __m256i m = tail_mask(D - d);
      __m256 g0 = _mm256_mul_ps(_mm256_maskload_ps(w + d, m), _mm256_maskload_ps(g + d, m));
      a0 = _mm256_fmadd_ps(g0, _mm256_maskload_ps(xr + d, m), a0);
    }
    float dot = hsum(_mm256_add_ps(a0, a1));
    __m256 vc = _mm256_set1_ps(r * r * r * dot / float(D));
    __m256 vr = _mm256_set1_ps(r);
    float* dxr = dx + n * D;
    for (d = 0; d < D; d += 8) {
      __m256i m = tail_mask(D - d);
      __m256 vx = _mm256_maskload_ps(xr + d, m), vg = _mm256_maskload_ps(g + d, m);
      __m256 vw = _mm256_maskload_ps(w + d, m);
      __m256 vdx = _mm256_fmsub_ps(vr, _mm256_mul_ps(vw, vg), _mm256_mul_ps(vc, vx));
      _mm256_maskstore_ps(dxr + d, m, vdx);
      __m256 p = _mm256_maskload_ps(dw_part + d, m);
      _mm256_maskstore_ps(dw_part + d, m, _mm256_fmadd_ps(vg, _mm256_mul_ps(vx, vr), p));
    }
  }
}

}  // namespace olmo::kernels::isa_avx2
