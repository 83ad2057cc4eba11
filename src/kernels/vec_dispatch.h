// Internal, baseline TUs only: pick the per-ISA entry point (vec_kernels.h) for the active ISA,
// and split a range over OpenMP threads.
#pragma once
#include <omp.h>

#include <cstdint>

#include "core/cpu.h"

namespace olmo::kernels::detail {

// pick(isa_scalar::f, isa_avx2::f, isa_avx512::f) -> the one for olmo::active_isa().
template <class F>
F pick(F scalar, F avx2, F avx512) {
  switch (active_isa()) {
    case Isa::avx512: return avx512;
    case Isa::avx2: return avx2;
    default: return scalar;
  }
}

// f(i0, i1) on disjoint blocks covering [0, n), one block per thread, using at most
// n / grain threads (so small ranges stay on the calling thread, and nested calls inside a
// parallel region run serially). Block edges are multiples of `align` elements.
template <class F>
void parallel_blocks(int64_t n, int64_t grain, int64_t align, F&& f) {
  int64_t nt = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (grain > 0 && n / grain < nt) nt = n / grain;
  if (nt <= 1) {
    if (n > 0) f(int64_t(0), n);
    return;
  }
#pragma omp parallel num_threads(int(nt))
  {
    int64_t t = omp_get_thread_num(), T = omp_get_num_threads();
    int64_t i0 = n * t / T / align * align, i1 = t + 1 == T ? n : n * (t + 1) / T / align * align;
    if (i1 > i0) f(i0, i1);
  }
}

}  // namespace olmo::kernels::detail
