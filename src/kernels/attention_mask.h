// Internal helpers shared by the attention references and entry points: shape validation, the
// per-element visibility rule and the profiler's FLOP count (see attention.h for the mask definition).
#pragma once
#include <cstdint>

#include "core/error.h"
#include "kernels/attention.h"

namespace olmo::kernels {

inline void check_attn_shape(const AttnShape& s) {
  OLMO_CHECK(s.B > 0 && s.T > 0 && s.H > 0 && s.KV > 0 && s.hd > 0,
             "attention: shape must be positive (B=", s.B, " T=", s.T, " H=", s.H, " KV=", s.KV,
             " hd=", s.hd, ")");
  OLMO_CHECK(s.H % s.KV == 0, "attention: H=", s.H, " is not a multiple of KV=", s.KV);
}

// Key j visible to query i of batch row b (caller guarantees 0 <= j, i < T).
inline bool visible(const AttnShape& s, const int32_t* doc_ids, int64_t b, int64_t i, int64_t j) {
  if (j > i) return false;
  if (s.window > 0 && i - j >= s.window) return false;
  return !doc_ids || doc_ids[b * s.T + i] == doc_ids[b * s.T + j];
}

// FLOPs as model/flops.cpp counts them: 4 * hd per visible (query, key) pair and head forward
// (twice that backward), pairs from causal_pairs (attention.h).
inline double attention_flops(const AttnShape& s) {
  return 4.0 * double(s.B) * double(s.H) * double(s.hd) * causal_pairs(s.T, s.window);
}

}  // namespace olmo::kernels
