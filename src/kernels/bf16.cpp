// fp32 <-> bf16 conversion entry points (threading + ISA dispatch) and the scalar loops
// (contract in bf16.h). Vector loops: bf16_avx2.cpp, bf16_avx512.cpp.
#include "kernels/bf16.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/cpu.h"
#include "core/profile.h"
#include "kernels/bf16_isa.h"

namespace olmo::kernels {

namespace bf16_scalar {
void to_bf16(const float* x, bf16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = f32_to_bf16_ref(x[i]);
}
void to_f32(const bf16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = bf16_to_f32_ref(x[i]);
}
}  // namespace bf16_scalar

namespace {

constexpr int64_t kGrain = 1 << 15;  // elements per thread at least (below: one thread)

template <class In, class Out>
void run(void (*fn)(const In*, Out*, int64_t), const In* x, Out* y, int64_t n) {
  int64_t nt = omp_in_parallel() ? 1 : std::min<int64_t>(omp_get_max_threads(), n / kGrain);
  if (nt <= 1) {
    if (n > 0) fn(x, y, n);
    return;
  }
#pragma omp parallel num_threads(int(nt))
  {
    const int64_t t = omp_get_thread_num(), T = omp_get_num_threads();
    const int64_t i0 = n * t / T / 32 * 32, i1 = t + 1 == T ? n : n * (t + 1) / T / 32 * 32;
    if (i1 > i0) fn(x + i0, y + i0, i1 - i0);
  }
}

}  // namespace

void f32_to_bf16(const float* x, bf16_t* y, int64_t n) {
  OLMO_PROFILE("convert_bf16", 0);
  switch (active_isa()) {
    case Isa::avx512: return run(bf16_avx512::to_bf16, x, y, n);
    case Isa::avx2: return run(bf16_avx2::to_bf16, x, y, n);
    default: return run(bf16_scalar::to_bf16, x, y, n);
  }
}

void bf16_to_f32(const bf16_t* x, float* y, int64_t n) {
  OLMO_PROFILE("convert_bf16", 0);
  switch (active_isa()) {
    case Isa::avx512: return run(bf16_avx512::to_f32, x, y, n);
    case Isa::avx2: return run(bf16_avx2::to_f32, x, y, n);
    default: return run(bf16_scalar::to_f32, x, y, n);
  }
}

bool cpu_has_bf16() {
  static const bool has = [] {
    const char* e = std::getenv("OLMO_BF16");
    if (e && std::strcmp(e, "0") == 0) return false;
    return cpu_has_avx512_bf16();
  }();
  return has && active_isa() == Isa::avx512;
}

}  // namespace olmo::kernels
