// Greedy decoding: repeatedly run the full causal forward over the context and append the
// argmax token of the last position (no KV cache: O(n^2) forwards, fine for short demos).
// Ties pick the lowest id. Contexts longer than max_ctx keep their last max_ctx tokens.
#pragma once
#include <cstdint>
#include <vector>

#include "model/olmo3.h"

namespace olmo::eval {

// Returns only the new tokens; stops early after emitting stop_id (if >= 0).
std::vector<uint32_t> greedy_generate(model::Olmo3& m, const std::vector<uint32_t>& prompt,
                                      int64_t max_new_tokens, int64_t max_ctx,
                                      int64_t stop_id = -1);

}  // namespace olmo::eval
