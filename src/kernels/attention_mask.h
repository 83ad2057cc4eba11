// Internal helpers shared by the attention reference and the tiled kernels: shape validation and
// the per-element visibility rule (see attention.h for the mask definition).
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

}  // namespace olmo::kernels
