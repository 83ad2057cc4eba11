// SwiGLU activation of the MLP: out = silu(gate) * up, silu(g) = g * sigmoid(g) = g / (1 + e^-g).
// Backward: s = sigmoid(g); dup = dout * silu(g); dgate = dout * up * s * (1 + g * (1 - s)).
// Shapes: flat arrays of n floats (gate, up: the two halves of the MLP's first projection).
// Cost: memory-bound, one pass; the vector paths use a Cephes-style exp (within ~2 ulp) and an
// exact division. Threads: OpenMP over blocks.
#pragma once
#include <cmath>
#include <cstdint>

namespace olmo::kernels {

void swiglu_forward(const float* gate, const float* up, float* out, int64_t n);
// dgate, dup overwritten. dgate/dup may not alias gate/up.
void swiglu_backward(const float* gate, const float* up, const float* dout, float* dgate,
                     float* dup, int64_t n);

template <class T>
void swiglu_forward_ref(const T* gate, const T* up, T* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    T s = T(1) / (T(1) + std::exp(-gate[i]));
    out[i] = gate[i] * s * up[i];
  }
}

template <class T>
void swiglu_backward_ref(const T* gate, const T* up, const T* dout, T* dgate, T* dup,
                         int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    T g = gate[i];
    T s = T(1) / (T(1) + std::exp(-g));
    dup[i] = dout[i] * g * s;
    dgate[i] = dout[i] * up[i] * s * (T(1) + g * (T(1) - s));
  }
}

}  // namespace olmo::kernels
