// Text generation with an OLMo 3 model.
//
// generate(): batched prompts with a KV cache (model/kv_cache.h). Each prompt is prefilled on
// its own (no padding), then all unfinished sequences advance one token per decode step
// (sequences at different positions share the step's GEMMs). The next token comes from
// eval::Sampler (greedy, temperature, top-k, top-p, seed; one random stream per prompt index).
// A sequence stops after emitting eos_id (included in its output), after max_new_tokens, or when
// prompt + output fill the model's context (max_seq_len). Token ids are limited to
// [0, vocab_limit) when vocab_limit > 0 (the tokenizer's ids of a padded-vocabulary model).
// Errors (olmo::Error): no prompts, an empty prompt, a token outside the vocabulary, a prompt
// that does not leave room for one new token in the model's context (it names the prompt, its
// length and the context), bad sampling parameters.
// Cost: prefill = one forward of each prompt; each step = one weight pass for all sequences.
// With GenerateOptions::step_logits set, the logits row each new token was chosen from is copied
// out as well (V floats per new token; for parity tests against transformers' generate()).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "eval/sampling.h"
#include "model/olmo3.h"

namespace olmo::eval {

struct GenerateOptions {
  int64_t max_new_tokens = 32;
  SamplingParams sampling;
  int64_t eos_id = -1;       // < 0: never stop early
  int64_t vocab_limit = 0;   // 0: the model's whole vocabulary
  // Not null: (*step_logits)[b] receives, per new token of prompt b, the V logits it was chosen
  // from (the full row, before vocab_limit / sampling), concatenated.
  std::vector<std::vector<float>>* step_logits = nullptr;
};

struct GenerateStats {
  int64_t prompt_tokens = 0, new_tokens = 0, decode_steps = 0;
  double prefill_s = 0, decode_s = 0;  // wall time of the prefills / of the decode steps
};

struct Generation {
  std::vector<std::vector<uint32_t>> tokens;  // new tokens of each prompt
  std::vector<std::string> finish;            // "eos" | "length" | "context"
  GenerateStats stats;
};

Generation generate(model::Olmo3& m, const std::vector<std::vector<uint32_t>>& prompts,
                    const GenerateOptions& opt);

}  // namespace olmo::eval
