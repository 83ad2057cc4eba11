// SwiGLU public entry points (threading + ISA dispatch) and the scalar kernels.
// Vector kernels: swiglu_avx2.cpp, swiglu_avx512.cpp.
#include "kernels/swiglu.h"

#include <cmath>

#include "kernels/vec_dispatch.h"
#include "kernels/vec_kernels.h"

namespace olmo::kernels {

namespace isa_scalar {
void swiglu_fwd(const float* gate, const float* up, float* out, int64_t i0, int64_t i1) {
  for (int64_t i = i0; i < i1; ++i) {
    float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}
void swiglu_bwd(const float* gate, const float* up, const float* dout, float* dgate,
                float* dup, int64_t i0, int64_t i1) {
  for (int64_t i = i0; i < i1; ++i) {
    float g = gate[i];
    float s = 1.0f / (1.0f + std::exp(-g));
    dup[i] = dout[i] * (g * s);
    dgate[i] = dout[i] * up[i] * (s * (1.0f + g * (1.0f - s)));
  }
}
}  // namespace isa_scalar

namespace {
constexpr int64_t kGrain = 16384;
}

void swiglu_forward(const float* gate, const float* up, float* out, int64_t n) {
  auto fn = detail::pick(isa_scalar::swiglu_fwd, isa_avx2::swiglu_fwd, isa_avx512::swiglu_fwd);
  detail::parallel_blocks(n, kGrain, 16, [&](int64_t i0, int64_t i1) { fn(gate, up, out, i0, i1); });
}

void swiglu_backward(const float* gate, const float* up, const float* dout, float* dgate,
                     float* dup, int64_t n) {
  auto fn = detail::pick(isa_scalar::swiglu_bwd, isa_avx2::swiglu_bwd, isa_avx512::swiglu_bwd);
  detail::parallel_blocks(n, kGrain, 16, [&](int64_t i0, int64_t i1) {
    fn(gate, up, dout, dgate, dup, i0, i1);
  });
}

}  // namespace olmo::kernels
