// Flat fp32 elementwise kernels used by the model and the optimizer (residual adds, gradient
// accumulation, scaling, squared norms). All are memory-bound single passes, vectorised per ISA
// and split over OpenMP threads for large n (small n runs on the calling thread).
#pragma once
#include <cstdint>

namespace olmo::kernels {

void add_inplace(float* y, const float* x, int64_t n);              // y += x
void add(float* out, const float* a, const float* b, int64_t n);   // out = a + b (may alias)
void axpy(float* y, float a, const float* x, int64_t n);           // y += a * x
void scale_inplace(float* y, float a, int64_t n);                  // y *= a
// sum_i x_i^2 in double precision. Deterministic: fixed blocking that depends only on n.
double sum_squares(const float* x, int64_t n);

}  // namespace olmo::kernels
