// Batched generation with a KV cache (see generate.h).
#include "eval/generate.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "model/kv_cache.h"

namespace olmo::eval {

namespace {
double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}
}  // namespace

Generation generate(model::Olmo3& m, const std::vector<std::vector<uint32_t>>& prompts,
                    const GenerateOptions& opt) {
  const model::ModelConfig& c = m.config();
  const int64_t B = int64_t(prompts.size()), V = c.vocab_size, ctx = c.max_seq_len;
  OLMO_CHECK(B > 0, "generate: no prompts");
  OLMO_CHECK(opt.max_new_tokens >= 1, "generate: max_new_tokens must be >= 1, got ",
             opt.max_new_tokens);
  OLMO_CHECK(opt.vocab_limit >= 0 && opt.vocab_limit <= V, "generate: vocab_limit ",
             opt.vocab_limit, " outside 0..", V);
  validate(opt.sampling);
  const int64_t limit = opt.vocab_limit > 0 ? opt.vocab_limit : V;
  int64_t longest = 0;
  for (int64_t b = 0; b < B; ++b) {
    const auto& p = prompts[size_t(b)];
    const int64_t n = int64_t(p.size());
    OLMO_CHECK(n > 0, "generate: prompt ", b, " is empty");
    OLMO_CHECK(n < ctx, "prompt ", b, " has ", n, " tokens but the model's context is ", ctx,
               " tokens (max_seq_len of '", c.name, "'): at most ", ctx - 1,
               " prompt tokens leave room to generate");
    for (size_t i = 0; i < p.size(); ++i)
      OLMO_CHECK(int64_t(p[i]) < V, "prompt ", b, " token ", i, " is ", p[i],
                 ", outside the model's vocabulary of ", V);
    longest = std::max(longest, n + opt.max_new_tokens);
  }
  model::Decoder dec(m, B, std::min(longest, ctx));
  Generation g;
  g.tokens.resize(size_t(B));
  g.finish.assign(size_t(B), "");
  std::vector<Sampler> samplers;
  for (int64_t b = 0; b < B; ++b) samplers.emplace_back(opt.sampling, uint64_t(b));
  std::vector<float> logits(size_t(B * V));

  // Takes sequence b's next token from its logits row; marks it finished when it must stop.
  if (opt.step_logits) opt.step_logits->assign(size_t(B), {});
  auto choose = [&](int64_t b, const float* row) {
    if (opt.step_logits) {
      auto& keep = (*opt.step_logits)[size_t(b)];
      keep.insert(keep.end(), row, row + V);
    }
    int64_t t = samplers[size_t(b)].next(row, limit);
    auto& out = g.tokens[size_t(b)];
    out.push_back(uint32_t(t));
    int64_t total = int64_t(prompts[size_t(b)].size() + out.size());
    if (opt.eos_id >= 0 && t == opt.eos_id) g.finish[size_t(b)] = "eos";
    else if (int64_t(out.size()) >= opt.max_new_tokens) g.finish[size_t(b)] = "length";
    else if (total >= ctx) g.finish[size_t(b)] = "context";
  };

  double t0 = now_s();
  for (int64_t b = 0; b < B; ++b) {
    const auto& p = prompts[size_t(b)];
    std::vector<int32_t> ids(p.begin(), p.end());
    dec.prefill(b, ids.data(), int64_t(ids.size()), logits.data());
    choose(b, logits.data());
    g.stats.prompt_tokens += int64_t(ids.size());
  }
  double t1 = now_s();
  std::vector<int64_t> seq;
  std::vector<int32_t> tok;
  for (;;) {
    seq.clear();
    tok.clear();
    for (int64_t b = 0; b < B; ++b)
      if (g.finish[size_t(b)].empty()) {
        seq.push_back(b);
        tok.push_back(int32_t(g.tokens[size_t(b)].back()));
      }
    if (seq.empty()) break;
    dec.step(seq.data(), tok.data(), int64_t(seq.size()), logits.data());
    for (size_t i = 0; i < seq.size(); ++i) choose(seq[i], logits.data() + i * size_t(V));
    ++g.stats.decode_steps;
  }
  g.stats.prefill_s = t1 - t0;
  g.stats.decode_s = now_s() - t1;
  for (auto& t : g.tokens) g.stats.new_tokens += int64_t(t.size());
  return g;
}

}  // namespace olmo::eval
