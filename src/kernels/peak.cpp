// fp32 FMA peak calibration: run the per-ISA FMA loop on all requested threads at once, in
// passes of ~`seconds`/8, and report the best pass.
#include "kernels/peak.h"

#include <omp.h>

#include <algorithm>

#include "core/cpu.h"
#include "core/timer.h"

namespace olmo::kernels {

// Per-ISA loops (peak_avx512.cpp, peak_avx2.cpp, scalar below): run `iters` iterations and
// return the number of flops executed (the accumulators are folded into *sink).
namespace isa_avx512 { double fma_loop(int64_t iters, float* sink); }
namespace isa_avx2 { double fma_loop(int64_t iters, float* sink); }
namespace isa_scalar {
double fma_loop(int64_t iters, float* sink) {
  // 8 independent chains; the baseline ISA has no FMA so this is mul + add (2 flops).
  float a[8] = {1.0f, 1.001f, 1.002f, 1.003f, 1.004f, 1.005f, 1.006f, 1.007f};
  const float m = 0.999999f, c = 1e-7f;
  for (int64_t i = 0; i < iters; ++i)
  {
    for (int k = 0; k < 8; ++k) a[k] = a[k] * m + c;
    __asm__ volatile("" : "+m"(a));  // keep all 8 chains (no merging, no closed form)
  }
  float s = 0;
  for (float v : a) s += v;
  *sink += s;
  return double(iters) * 8 * 2;
}
}  // namespace isa_scalar

double measure_fp32_peak_gflops(double seconds, int threads) {
  if (threads <= 0) threads = omp_get_max_threads();
  double (*loop)(int64_t, float*) = isa_scalar::fma_loop;
  if (active_isa() == Isa::avx512) loop = isa_avx512::fma_loop;
  else if (active_isa() == Isa::avx2) loop = isa_avx2::fma_loop;
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

}  // namespace olmo::kernels
