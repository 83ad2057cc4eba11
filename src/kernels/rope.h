// Rotary position embedding, rotate_half (NeoX / Hugging Face) layout.
// For a head vector x[0..hd) with half = hd/2, position p, angle a_j = p * inv_freq[j]:
//   y[j]        = x[j] * cos a_j - x[j+half] * sin a_j
//   y[j+half]   = x[j+half] * cos a_j + x[j] * sin a_j          (j < half)
// inv_freq[j] = 1 / theta^(2j/hd), computed as HF Olmo3RotaryEmbedding does (fp32 exponent
// 2j/hd, fp32 power, fp32 reciprocal; angle = fp32(p) * inv_freq in fp32; cos/sin of that fp32
// angle, here from core/det_math.h's double cos/sin rounded to fp32, where torch's are within
// 1 ulp).
// YaRN (long-context RoPE scaling, spec 2.4): the table is built from blended inverse
// frequencies and both cos and sin are multiplied by the attention factor m (so q.k logits
// scale by m^2); the rotation kernels are unchanged. Two formulas, each with its library's fp32
// rounding: YarnFormula::olmo_core (YaRNRoPEScalingConfig.compute_scaled_inv_freq: correction
// range clamped to [0, hd/2-1], m = 0.1 ln(factor) + 1) and YarnFormula::hf (transformers
// _compute_yarn_parameters with truncate=True: range clamped to [0, hd-1], m from the config or
// 0.1 ln(factor) + 1). yarn_inv_freq_ref is the readable double-precision formula both are
// tested against.
// Backward applies the transpose rotation (angle -> -angle) to the incoming gradient.
// Shapes: x [B, T, H, hd] row-major, token t of each sequence has position t (t < max_pos);
// row_stride = floats between consecutive tokens (0 = H*hd), so q/k can live inside a wider
// fused buffer. Cost: one read + write of x; table row reused across the H heads.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/det_math.h"

namespace olmo::kernels {

struct RopeTable {
  int64_t max_pos = 0, head_dim = 0;
  std::vector<float> cos, sin;  // [max_pos, head_dim/2]
};

// head_dim must be even and > 0; max_pos > 0.
RopeTable rope_table(int64_t max_pos, int64_t head_dim, double theta);

enum class YarnFormula { olmo_core, hf };

struct YarnParams {
  double factor = 8;              // context expansion, > 1
  double beta_fast = 32, beta_slow = 1;
  int64_t old_context_len = 8192; // context the base model was trained with, > 0
  double attention_factor = 0;    // m; 0 = 0.1 ln(factor) + 1
};

// m = attention_factor if set, else 0.1 ln(factor) + 1 (inline: parsers use it without linking
// the kernels).
inline double yarn_attention_factor(const YarnParams& y) {
  return y.attention_factor > 0 ? y.attention_factor : 0.1 * det::log(y.factor) + 1.0;
}
// Truncated correction range [low, high] of the ramp (dims below low keep the original
// frequency, dims above high are fully interpolated), clamped as `f` does.
struct YarnRange {
  int64_t low, high;
};
YarnRange yarn_correction_range(int64_t head_dim, double theta, const YarnParams& y,
                                YarnFormula f);
// fp32 inverse frequencies [head_dim/2]: plain RoPE, and YaRN rounded as `f` rounds them.
std::vector<float> rope_inv_freq(int64_t head_dim, double theta);
std::vector<float> yarn_inv_freq(int64_t head_dim, double theta, const YarnParams& y,
                                 YarnFormula f);
// The same blend in double precision, written as the paper's formula (reference for tests).
std::vector<double> yarn_inv_freq_ref(int64_t head_dim, double theta, const YarnParams& y,
                                      YarnFormula f);
// YaRN table: cos/sin of p * yarn_inv_freq, each multiplied by m in fp32. Throws olmo::Error for
// factor <= 1, old_context_len <= 0, beta_slow <= 0 or beta_fast <= beta_slow.
RopeTable rope_table(int64_t max_pos, int64_t head_dim, double theta, const YarnParams& y,
                     YarnFormula f);

// In place. Throws olmo::Error if hd != table.head_dim or T > table.max_pos.
void rope_forward(float* x, int64_t B, int64_t T, int64_t H, int64_t hd, const RopeTable& tab,
                  int64_t row_stride = 0);
void rope_backward(float* dx, int64_t B, int64_t T, int64_t H, int64_t hd, const RopeTable& tab,
                   int64_t row_stride = 0);
// One token per row at its own position: x [rows, H, hd], row r rotated by position pos[r]
// (incremental decoding, model/kv_cache.h). Throws olmo::Error for a position outside the table.
void rope_forward_at(float* x, int64_t rows, int64_t H, int64_t hd, const RopeTable& tab,
                     const int64_t* pos);

// Reference (templated so gradient checks run in double). sign = +1 forward, -1 backward.
template <class T>
void rope_ref(T* x, int64_t B, int64_t Tn, int64_t H, int64_t hd, const RopeTable& tab,
              T sign) {
  const int64_t half = hd / 2;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < Tn; ++t)
      for (int64_t h = 0; h < H; ++h) {
        T* v = x + ((b * Tn + t) * H + h) * hd;
        for (int64_t j = 0; j < half; ++j) {
          T c = tab.cos[t * half + j], s = sign * T(tab.sin[t * half + j]);
          T x1 = v[j], x2 = v[j + half];
          v[j] = x1 * c - x2 * s;
          v[j + half] = x2 * c + x1 * s;
        }
      }
}

}  // namespace olmo::kernels
