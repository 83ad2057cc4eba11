// Peak calibration: the throughput ceilings MFU is quoted against, measured on the spot.
//
// measure_fp32_peak_gflops: a register-only loop of vfmadd231ps on 24 independent zmm
//   accumulators (AVX-512; 12 ymm on AVX2; 8 scalar mul+add chains otherwise, per
//   olmo::active_isa()), 2 flops per lane per FMA.
// measure_bf16_peak_gflops: a register-only loop of VDPBF16PS (_mm512_dpbf16_ps) on 24
//   independent zmm accumulators. One instruction does, per fp32 lane, acc += a0*b0 + a1*b1 on
//   two bf16 pairs: 2 multiplies + 2 adds = 4 flops per lane, 64 flops per instruction (the
//   convention bf16 GEMM GFLOP/s are quoted in: 2*M*N*K per GEMM). Returns 0 when the CPU lacks
//   AVX512_BF16 (olmo::cpu_has_avx512_bf16()).
// Both run `threads` OpenMP threads at once (0 = omp_get_max_threads()), in passes of a few
// milliseconds for about `seconds` in total, and return the best pass in GFLOP/s. The machine
// may be shared: re-measure right before/after whatever you time.
#pragma once

namespace olmo::kernels {

double measure_fp32_peak_gflops(double seconds = 0.3, int threads = 0);
double measure_bf16_peak_gflops(double seconds = 0.3, int threads = 0);

}  // namespace olmo::kernels
