// fp32 FMA peak calibration: the throughput ceiling MFU is quoted against.
// Runs a register-only loop of vfmadd231ps on 24 independent zmm accumulators (AVX-512; ymm on
// AVX2; a scalar loop otherwise, per olmo::active_isa()) on `threads` OpenMP threads at once, in
// passes of a few milliseconds, for about `seconds` in total, and returns the best pass in
// GFLOP/s (2 flops per FMA lane). threads = 0 means all OpenMP threads (omp_get_max_threads()).
// The machine is shared, so re-measure right before/after whatever you time.
#pragma once

namespace olmo::kernels {

double measure_fp32_peak_gflops(double seconds = 0.3, int threads = 0);

}  // namespace olmo::kernels
