// Elementwise public entry points: threading and ISA dispatch. The kernels are
// elementwise_body.h (its scalar copy is compiled here).
#include "kernels/elementwise.h"

#include <cstddef>
#include <vector>

#include "core/profile.h"
#include "kernels/dispatch.h"
#include "kernels/elementwise_body.h"

namespace olmo::kernels {

namespace {
constexpr int64_t kGrain = 32768;  // floats per thread below which threading does not pay
}

void add_inplace(float* y, const float* x, int64_t n) {
  OLMO_PROFILE("elementwise", 0);
  auto fn = OLMO_DISPATCH(add_inplace);
  parallel_blocks(n, kGrain, 16, [&](int64_t i0, int64_t i1) { fn(y, x, i0, i1); });
}

void add(float* out, const float* a, const float* b, int64_t n) {
  OLMO_PROFILE("elementwise", 0);
  auto fn = OLMO_DISPATCH(add);
  parallel_blocks(n, kGrain, 16, [&](int64_t i0, int64_t i1) { fn(out, a, b, i0, i1); });
}

void axpy(float* y, float a, const float* x, int64_t n) {
  OLMO_PROFILE("elementwise", 0);
  auto fn = OLMO_DISPATCH(axpy);
  parallel_blocks(n, kGrain, 16, [&](int64_t i0, int64_t i1) { fn(y, a, x, i0, i1); });
}

void scale_inplace(float* y, float a, int64_t n) {
  OLMO_PROFILE("elementwise", 0);
  auto fn = OLMO_DISPATCH(scale_inplace);
  parallel_blocks(n, kGrain, 16, [&](int64_t i0, int64_t i1) { fn(y, a, i0, i1); });
}

double sum_squares(const float* x, int64_t n) {
  if (n <= 0) return 0.0;
  OLMO_PROFILE("elementwise", 0);
  auto fn = OLMO_DISPATCH(sum_squares);
  // Fixed blocks of 64K floats (independent of the thread count), summed in block order.
  constexpr int64_t kBlock = 65536;
  const int64_t nb = (n + kBlock - 1) / kBlock;
  std::vector<double> part(std::size_t(nb), 0.0);
#pragma omp parallel for schedule(static) if (nb > 1 && !omp_in_parallel())
  for (int64_t b = 0; b < nb; ++b) {
    int64_t i0 = b * kBlock, i1 = i0 + kBlock < n ? i0 + kBlock : n;
    part[std::size_t(b)] = fn(x, i0, i1);
  }
  double s = 0;
  for (double p : part) s += p;
  return s;
}

}  // namespace olmo::kernels
