// Greedy decoding (see generate.h).
#include "eval/generate.h"

#include <algorithm>

#include "core/error.h"

namespace olmo::eval {

std::vector<uint32_t> greedy_generate(model::Olmo3& m, const std::vector<uint32_t>& prompt,
                                      int64_t max_new_tokens, int64_t max_ctx, int64_t stop_id) {
  OLMO_CHECK(!prompt.empty(), "greedy_generate: empty prompt");
  const int64_t V = m.config().vocab_size;
  std::vector<int32_t> ctx(prompt.begin(), prompt.end());
  for (auto t : prompt) OLMO_CHECK(int64_t(t) < V, "prompt token ", t, " >= vocab size ", V);
  std::vector<uint32_t> out;
  std::vector<float> logits;
  for (int64_t k = 0; k < max_new_tokens; ++k) {
    int64_t L = std::min<int64_t>(int64_t(ctx.size()), max_ctx);
    const int32_t* start = ctx.data() + (ctx.size() - L);
    logits.resize(size_t(L) * V);
    m.forward_logits(start, 1, L, logits.data());
    const float* last = logits.data() + size_t(L - 1) * V;
    int64_t best = 0;
    for (int64_t v = 1; v < V; ++v)
      if (last[v] > last[best]) best = v;
    out.push_back(uint32_t(best));
    ctx.push_back(int32_t(best));
    if (stop_id >= 0 && best == stop_id) break;
  }
  return out;
}

}  // namespace olmo::eval
