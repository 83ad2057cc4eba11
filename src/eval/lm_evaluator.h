// Held-out loss / perplexity, as OLMo-core's LMEvaluatorCallback (eval/lm_evaluator.py): one
// document per padded instance (data::EvalDataset), token-mean cross-entropy over every
// supervised position of the set, PPL = exp(CE). No z-loss. Each batch is cut to its longest
// document before the forward (exact: causal attention never looks at the padding after a
// position, RoPE positions are unchanged), which saves most of the padding work.
// Cost: one forward per batch_instances documents; memory: the model's activations for
// batch_instances x T tokens.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/eval_dataset.h"
#include "model/olmo3.h"

namespace olmo::eval {

struct EvalResult {
  std::string label;
  double loss = 0;        // token-mean CE (nats)
  double ppl = 0;         // exp(loss)
  int64_t tokens = 0;     // supervised positions
  int64_t instances = 0;  // documents evaluated
  double seconds = 0;
};

class LmEvaluator {
 public:
  // max_instances 0 = all documents; batch_instances >= 1. Throws naming the set and path.
  LmEvaluator(std::string label, const std::string& path, int64_t seq_len, uint32_t vocab_size,
              data::FslOptions opt, int64_t max_instances, int64_t batch_instances);
  EvalResult run(model::Olmo3& m) const;
  const std::string& label() const { return label_; }
  int64_t instances() const { return n_; }

 private:
  std::string label_;
  std::unique_ptr<data::EvalDataset> ds_;
  int64_t n_, batch_;
};

}  // namespace olmo::eval
