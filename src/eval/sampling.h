// Next-token choice from a row of logits: greedy (argmax, lowest id on ties, as torch.argmax)
// or sampling with transformers' warper order: temperature, then top-k, then top-p (nucleus),
// then a draw from the renormalised softmax.
//   temperature T > 0: logits / T;  top_k K > 0: keep the K largest (ties at the K-th value kept,
//   as transformers' `logits < kth value` rule);  top_p P < 1: in descending probability order,
//   keep a token while the probability mass before it is < P (the first token always stays).
// Randomness: each Sampler owns a SplitMix64 stream seeded from (seed, stream), one stream per
// sequence, so a sequence's samples do not depend on which other sequences share its batch.
// The draws are our own, not torch's RNG: sampled text is reproducible here for a given seed but
// differs from transformers' sampled text.
// Cost: O(V) per token for greedy / temperature-only, O(V log K) with top-k, O(V log V) with
// top-p (a sort of the surviving candidates).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace olmo::eval {

struct SamplingParams {
  double temperature = 0;  // 0 = greedy
  int64_t top_k = 0;       // 0 = off
  double top_p = 1.0;      // 1 = off
  uint64_t seed = 0;
  bool greedy() const { return temperature == 0; }
};

// Throws olmo::Error naming the parameter: temperature < 0 or not finite, top_k < 0, top_p
// outside (0, 1].
void validate(const SamplingParams& p);

// Index of the largest of x[0..n) (the first one on ties); NaNs are never chosen unless all are.
int64_t argmax(const float* x, int64_t n);

class Sampler {
 public:
  Sampler(const SamplingParams& p, uint64_t stream);
  // Picks an id in [0, n) from logits[0..n).
  int64_t next(const float* logits, int64_t n);
  // Uniform double in [0, 1) from the stream (exposed for tests).
  double uniform();

 private:
  SamplingParams p_;
  uint64_t state_;
  std::vector<std::pair<float, int32_t>> cand_;
  std::vector<double> prob_;
};

}  // namespace olmo::eval
