// RMSNorm per-row kernels, AVX-512 (16 floats per zmm, masked tail). Intrinsics only: no std::.
// GCC 12 warns falsely on the _mm*_undefined_* operands inside its own intrinsic headers.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/vec_kernels.h"

namespace olmo::kernels::isa_avx512 {

static inline __mmask16 tail_mask(int64_t rem) {
  return rem >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << rem) - 1u);
}

void rmsnorm_fwd_rows(const float* x, const float* w, float* y, float* rstd, int64_t n0,
                      int64_t n1, int64_t D, float eps) {
  for (int64_t n = n0; n < n1; ++n) {
    const float* xr = x + n * D;
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(),
           a3 = _mm512_setzero_ps();
    int64_t d = 0;
    for (; d + 64 <= D; d += 64) {
      __m512 v0 = _mm512_loadu_ps(xr + d), v1 = _mm512_loadu_ps(xr + d + 16);
      __m512 v2 = _mm512_loadu_ps(xr + d + 32), v3 = _mm512_loadu_ps(xr + d + 48);
      a0 = _mm512_fmadd_ps(v0, v0, a0);
      a1 = _mm512_fmadd_ps(v1, v1, a1);
      a2 = _mm512_fmadd_ps(v2, v2, a2);
      a3 = _mm512_fmadd_ps(v3, v3, a3);
    }
    for (; d < D; d += 16) {
      __m512 v = _mm512_maskz_loadu_ps(tail_mask(D - d), xr + d);
      a0 = _mm512_fmadd_ps(v, v, a0);
    }
    float ss = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
    float r = 1.0f / __builtin_sqrtf(ss / float(D) + eps);
    rstd[n] = r;
    __m512 vr = _mm512_set1_ps(r);
    float* yr = y + n * D;
    for (d = 0; d < D; d += 16) {
      __mmask16 m = tail_mask(D - d);
      __m512 v = _mm512_maskz_loadu_ps(m, xr + d), vw = _mm512_maskz_loadu_ps(m, w + d);
      _mm512_mask_storeu_ps(yr + d, m, _mm512_mul_ps(vw, _mm512_mul_ps(v, vr)));
    }
  }
}

void rmsnorm_bwd_rows(const float* dy, const float* x, const float* w, const float* rstd,
                      float* dx, float* dw_part, int64_t n0, int64_t n1, int64_t D) {
  for (int64_t n = n0; n < n1; ++n) {
    const float* xr = x + n * D;
    const float* g = dy + n * D;
    float r = rstd[n];
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    int64_t d = 0;
    for (; d + 32 <= D; d += 32) {
      __m512 g0 = _mm512_mul_ps(_mm512_loadu_ps(w + d), _mm512_loadu_ps(g + d));
      __m512 g1 = _mm512_mul_ps(_mm512_loadu_ps(w + d + 16), _mm512_loadu_ps(g + d + 16));
      a0 = _mm512_fmadd_ps(g0, _mm512_loadu_ps(xr + d), a0);
      a1 = _mm512_fmadd_ps(g1, _mm512_loadu_ps(xr + d + 16), a1);
    }
    for (; d < D; d += 16) {
      __mmask16 m = tail_mask(D - d);
      __m512 g0 = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, w + d), _mm512_maskz_loadu_ps(m, g + d));
      a0 = _mm512_fmadd_ps(g0, _mm512_maskz_loadu_ps(m, xr + d), a0);
    }
    float dot = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
    __m512 vc = _mm512_set1_ps(r * r * r * dot / float(D));
    __m512 vr = _mm512_set1_ps(r);
    float* dxr = dx + n * D;
    for (d = 0; d < D; d += 16) {
      __mmask16 m = tail_mask(D - d);
      __m512 vx = _mm512_maskz_loadu_ps(m, xr + d), vg = _mm512_maskz_loadu_ps(m, g + d);
      __m512 vw = _mm512_maskz_loadu_ps(m, w + d);
      // dx = r * (w*g) - c * x
      __m512 vdx = _mm512_fmsub_ps(vr, _mm512_mul_ps(vw, vg), _mm512_mul_ps(vc, vx));
      _mm512_mask_storeu_ps(dxr + d, m, vdx);
      __m512 p = _mm512_maskz_loadu_ps(m, dw_part + d);
      _mm512_mask_storeu_ps(dw_part + d, m, _mm512_fmadd_ps(vg, _mm512_mul_ps(vx, vr), p));
    }
  }
}

}  // namespace olmo::kernels::isa_avx512
