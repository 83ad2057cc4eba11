// Internal: the fp32 FMA peak loop (peak.h), written once over simd.h's Vec and stamped per ISA
// (peak.cpp: scalar; stamp_avx2.cpp, stamp_avx512.cpp). Register-only: kAcc independent
// accumulators a = a * m + c, each made opaque to the optimiser after every iteration (so no
// chain can be merged, hoisted or solved in closed form). 24 zmm accumulators on AVX-512 (4-cycle
// latency x 2 FMA ports x 3), 12 ymm on AVX2 (16 registers), 8 chains of mul + add on the
// baseline (no FMA instruction; still 2 flops per lane and step).
#pragma once
#include <stdint.h>

#include "kernels/simd.h"

#define OLMO_PEAK_BODY_DECLS                                                                   \
  /* Runs `iters` iterations, folds the accumulators into *sink, returns the flops executed. */ \
  double fma_peak_loop(int64_t iters, float* sink);

namespace olmo::kernels {
OLMO_FOR_EACH_ISA(OLMO_PEAK_BODY_DECLS)

namespace OLMO_ISA_NS {

double fma_peak_loop(int64_t iters, float* sink) {
  constexpr int kAcc = Vec::W == 16 ? 24 : Vec::W == 8 ? 12 : 8;
  Vec::R a[kAcc];
  // Distinct starting values: equal chains were once CSE'd into one, tripling the figure.
#pragma GCC unroll 24
  for (int k = 0; k < kAcc; ++k) a[k] = Vec::set1(1.0f + 0.001f * float(k));
  const Vec::R m = Vec::set1(0.999999f), c = Vec::set1(1e-7f);
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 24
    for (int k = 0; k < kAcc; ++k) a[k] = Vec::fmadd(a[k], m, c);
#pragma GCC unroll 24
    for (int k = 0; k < kAcc; ++k) Vec::opaque(a[k]);
  }
  Vec::R s = a[0];
#pragma GCC unroll 24
  for (int k = 1; k < kAcc; ++k) s = Vec::add(s, a[k]);
  *sink += Vec::hsum_w(s);
  return double(iters) * kAcc * Vec::W * 2;
}

}  // namespace OLMO_ISA_NS
}  // namespace olmo::kernels
