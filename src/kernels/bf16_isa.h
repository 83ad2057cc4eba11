// Internal: the per-ISA fp32 <-> bf16 loops behind bf16.h (bf16.cpp scalar, bf16_avx2.cpp,
// bf16_avx512.cpp). Each converts n contiguous elements on the calling thread.
#pragma once
#include <cstdint>

#include "kernels/bf16.h"

namespace olmo::kernels {
namespace bf16_scalar {
void to_bf16(const float* x, bf16_t* y, int64_t n);
void to_f32(const bf16_t* x, float* y, int64_t n);
}  // namespace bf16_scalar
namespace bf16_avx2 {
void to_bf16(const float* x, bf16_t* y, int64_t n);
void to_f32(const bf16_t* x, float* y, int64_t n);
}  // namespace bf16_avx2
namespace bf16_avx512 {
void to_bf16(const float* x, bf16_t* y, int64_t n);
void to_f32(const bf16_t* x, float* y, int64_t n);
}  // namespace bf16_avx512
}  // namespace olmo::kernels
