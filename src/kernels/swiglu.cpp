// SwiGLU public entry points: threading and ISA dispatch. The kernels are swiglu_body.h (its
// scalar copy is compiled here).
#include "kernels/swiglu.h"

#include "core/profile.h"
#include "kernels/dispatch.h"
#include "kernels/swiglu_body.h"

namespace olmo::kernels {

namespace {
constexpr int64_t kGrain = 16384;
}

void swiglu_forward(const float* gate, const float* up, float* out, int64_t n) {
  OLMO_PROFILE("swiglu", 0);
  auto fn = OLMO_DISPATCH(swiglu_fwd);
  parallel_blocks(n, kGrain, 16, [&](int64_t i0, int64_t i1) { fn(gate, up, out, i0, i1); });
}

void swiglu_backward(const float* gate, const float* up, const float* dout, float* dgate,
                     float* dup, int64_t n) {
  OLMO_PROFILE("swiglu", 0);
  auto fn = OLMO_DISPATCH(swiglu_bwd);
  parallel_blocks(n, kGrain, 16, [&](int64_t i0, int64_t i1) {
    fn(gate, up, dout, dgate, dup, i0, i1);
  });
}

}  // namespace olmo::kernels
