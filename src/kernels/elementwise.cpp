// Elementwise public entry points (threading + ISA dispatch) and their scalar kernels.
// Vector kernels: elementwise_avx2.cpp, elementwise_avx512.cpp.
#include "kernels/elementwise.h"

#include <cstddef>
#include <vector>

#include "kernels/vec_dispatch.h"
#include "kernels/vec_kernels.h"

namespace olmo::kernels {

namespace isa_scalar {
void add_inplace(float* y, const float* x, int64_t i0, int64_t i1) {
  for (int64_t i = i0; i < i1; ++i) y[i] += x[i];
}
void add(float* out, const float* a, const float* b, int64_t i0, int64_t i1) {
  for (int64_t i = i0; i < i1; ++i) out[i] = a[i] + b[i];
}
void axpy(float* y, float a, const float* x, int64_t i0, int64_t i1) {
  for (int64_t i = i0; i < i1; ++i) y[i] += a * x[i];
}
void scale_inplace(float* y, float a, int64_t i0, int64_t i1) {
  for (int64_t i = i0; i < i1; ++i) y[i] *= a;
}
double sum_squares(const float* x, int64_t i0, int64_t i1) {
  double acc[4] = {0, 0, 0, 0};
  int64_t i = i0;
  for (; i + 4 <= i1; i += 4)
    for (int k = 0; k < 4; ++k) acc[k] += double(x[i + k]) * double(x[i + k]);
  for (; i < i1; ++i) acc[0] += double(x[i]) * double(x[i]);
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}
}  // namespace isa_scalar

namespace {
constexpr int64_t kGrain = 32768;  // floats per thread below which threading does not pay
}

void add_inplace(float* y, const float* x, int64_t n) {
  auto fn = detail::pick(isa_scalar::add_inplace, isa_avx2::add_inplace, isa_avx512::add_inplace);
  detail::parallel_blocks(n, kGrain, 16, [&](int64_t i0, int64_t i1) { fn(y, x, i0, i1); });
}

void add(float* out, const float* a, const float* b, int64_t n) {
  auto fn = detail::pick(isa_scalar::add, isa_avx2::add, isa_avx512::add);
  detail::parallel_blocks(n, kGrain, 16, [&](int64_t i0, int64_t i1) { fn(out, a, b, i0, i1); });
}

void axpy(float* y, float a, const float* x, int64_t n) {
  auto fn = detail::pick(isa_scalar::axpy, isa_avx2::axpy, isa_avx512::axpy);
  detail::parallel_blocks(n, kGrain, 16, [&](int64_t i0, int64_t i1) { fn(y, a, x, i0, i1); });
}

void scale_inplace(float* y, float a, int64_t n) {
  auto fn = detail::pick(isa_scalar::scale_inplace, isa_avx2::scale_inplace,
                         isa_avx512::scale_inplace);
  detail::parallel_blocks(n, kGrain, 16, [&](int64_t i0, int64_t i1) { fn(y, a, i0, i1); });
}

double sum_squares(const float* x, int64_t n) {
  if (n <= 0) return 0.0;
  auto fn = detail::pick(isa_scalar::sum_squares, isa_avx2::sum_squares,
                         isa_avx512::sum_squares);
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
