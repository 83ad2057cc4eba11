// Peak calibration (peak.h): run a per-ISA register loop on all requested threads at once, in
// passes of ~`seconds`/8, and report the best pass. The fp32 loop is peak_body.h (its scalar
// copy is compiled here); the bf16 loop is peak_bf16_avx512bf16.cpp.
#include "kernels/peak.h"

#include <omp.h>

#include <algorithm>

#include "core/cpu.h"
#include "core/timer.h"
#include "kernels/dispatch.h"
#include "kernels/peak_body.h"

namespace olmo::kernels {

namespace isa_avx512bf16 {
double bf16_peak_loop(int64_t iters, float* sink);
}

namespace {
// loop(iters, sink) returns the flops it executed.
double best_pass_gflops(double (*loop)(int64_t, float*), double seconds, int threads) {
  if (threads <= 0) threads = omp_get_max_threads();
  // Size one pass at ~seconds/8 (at least 2 ms) from a short single-thread probe.
  float sink = 0;
  int64_t iters = 1 << 12;
  double t0 = now_seconds();
  loop(iters, &sink);
  double dt = std::max(now_seconds() - t0, 1e-7);
  double pass_s = std::max(seconds / 8, 0.002);
  iters = std::max<int64_t>(1024, int64_t(double(iters) * pass_s / dt));
  double best = 0, spent = 0;
  int passes = 0;
  while (passes < 2 || spent < seconds) {
    double flops = 0;
    double start = now_seconds();
#pragma omp parallel num_threads(threads) reduction(+ : flops)
    {
      float s = 0;
      flops += loop(iters, &s);
      if (s == 12345.0f) sink += s;  // keep the result alive
    }
    double el = now_seconds() - start;
    spent += el;
    ++passes;
    best = std::max(best, flops / el * 1e-9);
    if (passes > 1000) break;
  }
  if (sink == 54321.0f) best += 1e-30;  // never true; defeats dead-code elimination
  return best;
}
}  // namespace

double measure_fp32_peak_gflops(double seconds, int threads) {
  return best_pass_gflops(OLMO_DISPATCH(fma_peak_loop), seconds, threads);
}

double measure_bf16_peak_gflops(double seconds, int threads) {
  if (!cpu_has_avx512_bf16()) return 0;
  return best_pass_gflops(isa_avx512bf16::bf16_peak_loop, seconds, threads);
}

}  // namespace olmo::kernels
