// RoPE tables (plain and YaRN, each with its reference library's fp32 rounding) and the
// threaded, ISA-dispatched rotation (the rotation itself is rope_body.h; its scalar copy is
// compiled here).
#include "kernels/rope.h"

#include <algorithm>
#include <cmath>

#include "core/det_math.h"
#include "core/error.h"
#include "core/profile.h"
#include "kernels/dispatch.h"
#include "kernels/rope_body.h"

namespace olmo::kernels {

namespace {
void check_dims(int64_t max_pos, int64_t head_dim, double theta) {
  OLMO_CHECK(head_dim > 0 && head_dim % 2 == 0, "rope_table: head_dim ", head_dim,
             " must be even and positive");
  OLMO_CHECK(max_pos > 0, "rope_table: max_pos ", max_pos, " must be positive");
  OLMO_CHECK(theta > 0, "rope_table: theta ", theta, " must be positive");
}

void check_yarn(const YarnParams& y) {
  OLMO_CHECK(y.factor > 1, "YaRN: factor must be > 1, got ", y.factor);
  OLMO_CHECK(y.old_context_len > 0, "YaRN: old context length must be positive, got ",
             y.old_context_len);
  OLMO_CHECK(y.beta_slow > 0 && y.beta_fast > y.beta_slow, "YaRN: need beta_fast > beta_slow > 0"
             ", got beta_fast ", y.beta_fast, ", beta_slow ", y.beta_slow);
  OLMO_CHECK(y.attention_factor >= 0, "YaRN: attention_factor must be >= 0 (0 = default), got ",
             y.attention_factor);
}

// cos/sin of fp32(pos) * inv[j] (fp32 product), in double (core/det_math.h) rounded to fp32, times `scale` in fp32 (torch
// multiplies the fp32 cos/sin tensors by the Python float attention factor).
RopeTable table_from_inv(int64_t max_pos, int64_t head_dim, const std::vector<float>& inv,
                         float scale) {
  const int64_t half = head_dim / 2;
  RopeTable t;
  t.max_pos = max_pos;
  t.head_dim = head_dim;
  t.cos.resize(size_t(max_pos * half));
  t.sin.resize(size_t(max_pos * half));
  for (int64_t pos = 0; pos < max_pos; ++pos)
    for (int64_t j = 0; j < half; ++j) {
      float a = float(pos) * inv[size_t(j)];  // fp32 product, as position.float() * inv_freq
      t.cos[size_t(pos * half + j)] = static_cast<float>(det::cos(double(a))) * scale;
      t.sin[size_t(pos * half + j)] = static_cast<float>(det::sin(double(a))) * scale;
    }
  return t;
}

// Correction dimension for n rotations over the old context (both libraries, in double).
double correction_dim(double n_rot, int64_t dim, double theta, int64_t old_ctx) {
  return (double(dim) * det::log(double(old_ctx) / (n_rot * 2.0 * M_PI))) /
         (2.0 * det::log(theta));
}
}  // namespace

std::vector<float> rope_inv_freq(int64_t head_dim, double theta) {
  check_dims(1, head_dim, theta);
  // HF / OLMo-core: inv_freq = 1.0 / (base ** (arange(0, dim, 2, float32) / dim)), all fp32.
  std::vector<float> inv(static_cast<size_t>(head_dim / 2));
  for (int64_t j = 0; j < head_dim / 2; ++j) {
    float e = float(2 * j) / float(head_dim);                       // fp32 division
    float p = static_cast<float>(det::pow(theta, double(e)));       // fp32 pow, rounded
    inv[size_t(j)] = 1.0f / p;                                       // fp32 reciprocal
  }
  return inv;
}

RopeTable rope_table(int64_t max_pos, int64_t head_dim, double theta) {
  check_dims(max_pos, head_dim, theta);
  return table_from_inv(max_pos, head_dim, rope_inv_freq(head_dim, theta), 1.0f);
}

YarnRange yarn_correction_range(int64_t head_dim, double theta, const YarnParams& y,
                                YarnFormula f) {
  check_dims(1, head_dim, theta);
  check_yarn(y);
  const int64_t half = head_dim / 2;
  auto lo = int64_t(std::floor(correction_dim(y.beta_fast, head_dim, theta, y.old_context_len)));
  auto hi = int64_t(std::ceil(correction_dim(y.beta_slow, head_dim, theta, y.old_context_len)));
  // OLMo-core clamps high to the last frequency index, transformers to the last dimension.
  const int64_t top = f == YarnFormula::olmo_core ? half - 1 : head_dim - 1;
  return {std::max<int64_t>(lo, 0), std::min<int64_t>(hi, top)};
}

std::vector<float> yarn_inv_freq(int64_t head_dim, double theta, const YarnParams& y,
                                 YarnFormula f) {
  const YarnRange r = yarn_correction_range(head_dim, theta, y, f);
  const int64_t half = head_dim / 2;
  const std::vector<float> extra = rope_inv_freq(head_dim, theta);
  const float factor = float(y.factor);
  std::vector<float> inv(static_cast<size_t>(half));
  if (f == YarnFormula::olmo_core) {
    // interp = extra / factor; span = max(high - low, 1e-3);
    // ramp = clamp((j - low) / span, 0, 1); inv = interp * ramp + extra * (1 - ramp).
    const float span = r.high - r.low >= 1 ? float(r.high - r.low) : 1e-3f;
    for (int64_t j = 0; j < half; ++j) {
      float ex = extra[size_t(j)];
      float in = ex / factor;
      float ramp = std::clamp((float(j) - float(r.low)) / span, 0.0f, 1.0f);
      float a = in * ramp, one_minus = 1.0f - ramp, b = ex * one_minus;
      inv[size_t(j)] = a + b;
    }
  } else {
    // pos = base ** (2j / dim); extra = 1 / pos; interp = 1 / (factor * pos);
    // ramp = clamp((j - low) / (high - low), 0, 1) (high += 0.001 when equal); e = 1 - ramp;
    // inv = interp * (1 - e) + extra * e.
    const double d = r.high == r.low ? (double(r.high) + 0.001) - double(r.low)
                                    : double(r.high - r.low);
    const float den = float(d);
    for (int64_t j = 0; j < half; ++j) {
      float e2 = float(2 * j) / float(head_dim);
      float pos = static_cast<float>(det::pow(theta, double(e2)));
      float ex = 1.0f / pos;
      float in = 1.0f / (factor * pos);
      float ramp = std::clamp((float(j) - float(r.low)) / den, 0.0f, 1.0f);
      float e = 1.0f - ramp;
      float one_minus_e = 1.0f - e;
      float a = in * one_minus_e, b = ex * e;
      inv[size_t(j)] = a + b;
    }
  }
  return inv;
}

std::vector<double> yarn_inv_freq_ref(int64_t head_dim, double theta, const YarnParams& y,
                                      YarnFormula f) {
  const YarnRange r = yarn_correction_range(head_dim, theta, y, f);
  std::vector<double> inv(static_cast<size_t>(head_dim / 2));
  for (int64_t j = 0; j < head_dim / 2; ++j) {
    double base = std::pow(theta, -2.0 * double(j) / double(head_dim));
    double span = f == YarnFormula::olmo_core ? std::max(double(r.high - r.low), 1e-3)
                  : r.high == r.low                ? 0.001
                                                   : double(r.high - r.low);
    double ramp = std::min(1.0, std::max(0.0, (double(j) - double(r.low)) / span));
    inv[size_t(j)] = base / y.factor * ramp + base * (1.0 - ramp);
  }
  return inv;
}

RopeTable rope_table(int64_t max_pos, int64_t head_dim, double theta, const YarnParams& y,
                     YarnFormula f) {
  check_dims(max_pos, head_dim, theta);
  return table_from_inv(max_pos, head_dim, yarn_inv_freq(head_dim, theta, y, f),
                        float(yarn_attention_factor(y)));
}

namespace {
// pos null: row r = b * T + t is at position t; else row r is at pos[r] (T = 1).
void rope_apply(float* x, int64_t B, int64_t T, int64_t H, int64_t hd, const RopeTable& tab,
                int64_t row_stride, float sign, const int64_t* pos = nullptr) {
  OLMO_CHECK(hd == tab.head_dim, "rope: head_dim ", hd, " does not match the table's ",
             tab.head_dim);
  OLMO_CHECK(T <= tab.max_pos, "rope: sequence length ", T, " exceeds the table's max_pos ",
             tab.max_pos);
  for (int64_t r = 0; pos && r < B * T; ++r)
    OLMO_CHECK(pos[r] >= 0 && pos[r] < tab.max_pos, "rope: position ", pos[r],
               " outside the table's 0..", tab.max_pos - 1);
  if (row_stride == 0) row_stride = H * hd;
  OLMO_PROFILE("rope", 0);
  auto fn = OLMO_DISPATCH(rope_heads);
  const int64_t half = hd / 2;
  const int64_t rows = B * T;
  int64_t grain = (16384 + H * hd - 1) / (H * hd > 0 ? H * hd : 1);
  parallel_blocks(rows, grain, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t t = pos ? pos[r] : r % T;
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

void rope_forward_at(float* x, int64_t rows, int64_t H, int64_t hd, const RopeTable& tab,
                     const int64_t* pos) {
  rope_apply(x, rows, 1, H, hd, tab, 0, 1.0f, pos);
}

}  // namespace olmo::kernels
