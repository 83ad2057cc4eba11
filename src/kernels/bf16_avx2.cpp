// fp32 <-> bf16 loops compiled for AVX2 (see bf16_isa.h): the integer round-to-nearest-even
// formula of bf16.h written as a branch-free loop that GCC vectorises at -O3 for this ISA, so
// the bits equal the scalar reference's.
#include <cstring>

#include "kernels/bf16_isa.h"

namespace olmo::kernels::bf16_avx2 {

void to_bf16(const float* x, bf16_t* y, int64_t n) {
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, x + i, 4);
    const uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    y[i] = (u & 0x7fffffffu) > 0x7f800000u ? bf16_t(0x7fc0) : bf16_t(r);
  }
}

void to_f32(const bf16_t* x, float* y, int64_t n) {
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t u = uint32_t(x[i]) << 16;
    std::memcpy(y + i, &u, 4);
  }
}

}  // namespace olmo::kernels::bf16_avx2
