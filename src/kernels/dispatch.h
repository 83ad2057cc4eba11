// The one way a public kernel entry point reaches its per-ISA body, and the thread split the
// memory-bound kernels share. Baseline translation units only (the public kernel .cpp files).
//
//   auto f = OLMO_DISPATCH(rmsnorm_fwd_rows);   // isa_scalar / isa_avx2 / isa_avx512 copy
//
// picks, by olmo::active_isa() (detected CPU, clamped by OLMO_ISA / set_isa_override), one of the
// three copies of a body function that simd.h stamped into namespaces isa_scalar, isa_avx2,
// isa_avx512 (declared in the body header with OLMO_FOR_EACH_ISA). The lookup is a switch on a
// cached value: call it once per kernel call, outside the hot loop.
#pragma once
#include <omp.h>

#include <cstdint>

#include "core/cpu.h"

namespace olmo::kernels {

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

}  // namespace olmo::kernels

// Qualified from any namespace that holds the isa_* namespaces (olmo::kernels, olmo::dist).
#define OLMO_DISPATCH(fn) ::olmo::kernels::pick(isa_scalar::fn, isa_avx2::fn, isa_avx512::fn)
