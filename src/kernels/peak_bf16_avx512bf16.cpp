// bf16 dot-product peak loop (peak.h): VDPBF16PS on 24 independent zmm accumulators, register
// only. Compiled with -mavx512bf16 (CMake's olmo_isa_flags: the _avx512bf16.cpp suffix) and
// called only when olmo::cpu_has_avx512_bf16(). The one kernel with a single ISA: the instruction
// exists nowhere else, so there is no body to write over simd.h's Vec.
// Flops: one VDPBF16PS multiplies 2 bf16 pairs per fp32 lane and adds both products into the
// lane (acc += a0*b0 + a1*b1): 2 multiplies + 2 adds = 4 flops per lane, 64 per zmm instruction.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#include <stdint.h>

namespace olmo::kernels::isa_avx512bf16 {

double bf16_peak_loop(int64_t iters, float* sink) {
  constexpr int kAcc = 24;
  __m512 a[kAcc];
#pragma GCC unroll 24
  for (int k = 0; k < kAcc; ++k) a[k] = _mm512_set1_ps(1.0f + 0.001f * float(k));
  // Small operands so the accumulators grow slowly (no overflow, no denormals).
  const __m512bh x = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(2e-3f));
  const __m512bh y = _mm512_cvtne2ps_pbh(_mm512_set1_ps(3e-3f), _mm512_set1_ps(1e-3f));
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 24
    for (int k = 0; k < kAcc; ++k) a[k] = _mm512_dpbf16_ps(a[k], x, y);
#pragma GCC unroll 24
    for (int k = 0; k < kAcc; ++k) __asm__ volatile("" : "+v"(a[k]));
  }
  __m512 s = a[0];
#pragma GCC unroll 24
  for (int k = 1; k < kAcc; ++k) s = _mm512_add_ps(s, a[k]);
  *sink += _mm512_reduce_add_ps(s);
  return double(iters) * kAcc * 16 * 4;
}

}  // namespace olmo::kernels::isa_avx512bf16
