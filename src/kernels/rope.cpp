// RoPE table (HF Olmo3RotaryEmbedding rounding) and the threaded, ISA-dispatched rotation.
// Scalar kernel here; vector kernels in rope_avx2.cpp / rope_avx512.cpp.
#include "kernels/rope.h"

#include <cmath>

#include "core/error.h"
#include "kernels/vec_dispatch.h"
#include "kernels/vec_kernels.h"

namespace olmo::kernels {

namespace isa_scalar {
void rope_heads(float* x, int64_t heads, int64_t hd, const float* cs, const float* sn,
                float sign) {
  const int64_t half = hd / 2;
  for (int64_t h = 0; h < heads; ++h) {
    float* v = x + h * hd;
    for (int64_t j = 0; j < half; ++j) {
      float c = cs[j], s = sign * sn[j];
      float x1 = v[j], x2 = v[j + half];
      float a = x1 * c, b = x2 * s, e = x2 * c, f = x1 * s;  // products rounded as in torch
      v[j] = a - b;
      v[j + half] = e + f;
    }
  }
}
}  // namespace isa_scalar

RopeTable rope_table(int64_t max_pos, int64_t head_dim, double theta) {
  OLMO_CHECK(head_dim > 0 && head_dim % 2 == 0, "rope_table: head_dim ", head_dim,
             " must be even and positive");
  OLMO_CHECK(max_pos > 0, "rope_table: max_pos ", max_pos, " must be positive");
  OLMO_CHECK(theta > 0, "rope_table: theta ", theta, " must be positive");
  const int64_t half = head_dim / 2;
  RopeTable t;
  t.max_pos = max_pos;
  t.head_dim = head_dim;
  t.cos.resize(size_t(max_pos * half));
  t.sin.resize(size_t(max_pos * half));
  // HF: inv_freq = 1.0 / (base ** (arange(0, dim, 2, float32) / dim)), all fp32 tensors.
  std::vector<float> inv(static_cast<size_t>(half));
  for (int64_t j = 0; j < half; ++j) {
    float e = float(2 * j) / float(head_dim);                       // fp32 division
    float p = static_cast<float>(std::pow(theta, double(e)));       // fp32 pow, rounded
    inv[size_t(j)] = 1.0f / p;                                       // fp32 reciprocal
  }
  for (int64_t pos = 0; pos < max_pos; ++pos)
    for (int64_t j = 0; j < half; ++j) {
      float a = float(pos) * inv[size_t(j)];  // fp32 product, as position.float() * inv_freq
      t.cos[size_t(pos * half + j)] = static_cast<float>(std::cos(double(a)));
      t.sin[size_t(pos * half + j)] = static_cast<float>(std::sin(double(a)));
    }
  return t;
}

namespace {
void rope_apply(float* x, int64_t B, int64_t T, int64_t H, int64_t hd, const RopeTable& tab,
                int64_t row_stride, float sign) {
  OLMO_CHECK(hd == tab.head_dim, "rope: head_dim ", hd, " does not match the table's ",
             tab.head_dim);
  OLMO_CHECK(T <= tab.max_pos, "rope: sequence length ", T, " exceeds the table's max_pos ",
             tab.max_pos);
  if (row_stride == 0) row_stride = H * hd;
  auto fn = detail::pick(isa_scalar::rope_heads, isa_avx2::rope_heads, isa_avx512::rope_heads);
  const int64_t half = hd / 2;
  const int64_t rows = B * T;
  int64_t grain = (16384 + H * hd - 1) / (H * hd > 0 ? H * hd : 1);
  detail::parallel_blocks(rows, grain, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t t = r % T;
      fn(x + r * row_stride, H, hd, tab.cos.data() + t * half, tab.sin.data() + t * half, sign);
    }
  });
}
}  // namespace

void rope_forward(float* x, int64_t B, int64_t T, int64_t H, int64_t hd, const RopeTable& tab,
                  int64_t row_stride) {
  rope_apply(x, B, T, H, hd, tab, row_stride, 1.0f);
}

void rope_backward(float* dx, int64_t B, int64_t T, int64_t H, int64_t hd, const RopeTable& tab,
                   int64_t row_stride) {
  rope_apply(dx, B, T, H, hd, tab, row_stride, -1.0f);
}

}  // namespace olmo::kernels
