// Held-out benchmark suites by ranked classification (OLMo-core DownstreamEvaluator / olmo_eval
// ICLMultiChoiceTaskDataset semantics): each item is a context and >= 2 candidate continuations,
// one of them gold. Per choice the model scores
//   ll = sum_{t in continuation} log p(x_t | x_<t)      over the input [eos] + ctx + cont
// (context and continuation tokenized separately, as olmo_eval does; dolma2 has no BOS, so the
// document separator eos that precedes every training document stands in front). Only the
// continuation positions are supervised (targets -100 elsewhere), so the LM head runs on them only.
// Suite metrics (mean over items):
//   acc           argmax_i ll_i == gold
//   acc_len_norm  argmax_i ll_i / chars_i == gold     (chars = Unicode code points)
//   bpb           -ll_gold / bytes_gold / ln 2         (bytes = UTF-8 bytes)
//   ce_loss       -ll_gold / tokens_gold
// chars and bytes exclude one leading space of the continuation (olmo_eval's convention: the
// space joins context and continuation). Ties go to the lowest choice index.
// Suite file: JSONL, one object per line {"id": str, "context": str, "choices": [str, ...],
// "gold": int} (other fields ignored); errors name FILE:LINE and the problem.
// Cost: the choices of an item run as one batch through forward_logits (continuation_logliks):
// choices x (|prefix| + longest choice - 1) positions of LM head; over-long inputs drop context
// tokens from the left to fit max_len.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "model/olmo3.h"

namespace olmo::eval {

struct SuiteItem {
  std::string id;
  std::string context;
  std::vector<std::string> choices;
  int gold = 0;
};

// Reads a suite file. max_items > 0 keeps the first max_items items.
std::vector<SuiteItem> load_suite(const std::string& path, int64_t max_items = 0);

// Length measures of a continuation string (one leading space excluded).
int64_t continuation_chars(const std::string& s);
int64_t continuation_bytes(const std::string& s);

// Sum of log p over `cont` given `prefix` (token ids), one forward of batch 1. When
// |prefix| + |cont| > max_len the prefix loses tokens from its left (*truncated = true); a
// continuation that alone needs more than max_len - 1 positions throws.
double continuation_loglik(model::Olmo3& m, const std::vector<int32_t>& prefix,
                           const std::vector<int32_t>& cont, int64_t max_len,
                           bool* truncated = nullptr);

// The same for several continuations of one prefix, batched: each row is prefix (left-truncated
// as above, per row) + cont_i, right-padded to the longest row (causal attention: padding never
// influences earlier positions); one forward_logits per chunk of rows holding at most
// max_logit_floats logits, then a log-softmax (fp32 exp, double sums) on the scored positions only.
// Much cheaper than one forward_loss per continuation (one pass over the LM head weights per
// chunk instead of per continuation); used by score_item and the exposure evaluator.
std::vector<double> continuation_logliks(model::Olmo3& m, const std::vector<int32_t>& prefix,
                                         const std::vector<std::vector<int32_t>>& conts,
                                         int64_t max_len, bool* truncated = nullptr,
                                         int64_t max_logit_floats = int64_t(1) << 25);

struct TokenizedItem {
  std::string id;
  int gold = 0;
  std::vector<int32_t> prefix;                 // [eos] + context tokens
  std::vector<std::vector<int32_t>> choices;   // continuation tokens per choice
  std::vector<int64_t> chars, bytes;           // per choice
};
TokenizedItem tokenize_item(const SuiteItem& it, const tokenizer::Tokenizer& tok);

struct ChoiceScore {
  double ll = 0;
  int64_t tokens = 0, chars = 0, bytes = 0;
};
struct ItemScore {
  std::string id;
  int gold = 0, pred = 0, pred_norm = 0;
  bool truncated = false;
  std::vector<ChoiceScore> choices;
};
ItemScore score_item(model::Olmo3& m, const TokenizedItem& it, int64_t max_len);

struct SuiteResult {
  std::string name;
  int64_t items = 0, forwards = 0, tokens = 0, truncated = 0;
  double acc = 0, acc_len_norm = 0, bpb = 0, ce_loss = 0;
  double seconds = 0;
  std::vector<ItemScore> per_item;
};
// Metrics of scored items (see the header comment); `seconds` is left 0.
SuiteResult summarize(const std::string& name, std::vector<ItemScore> items);

// A loaded, tokenized suite, ready to score many times (in-loop evaluation).
class BenchmarkSuite {
 public:
  // Throws naming the suite and the file.
  BenchmarkSuite(std::string name, const std::string& path, const tokenizer::Tokenizer& tok,
                 int64_t max_items);
  // max_len 0 = the model's max_seq_len. Checks that every token id fits the model's vocab.
  SuiteResult run(model::Olmo3& m, int64_t max_len = 0) const;
  const std::string& name() const { return name_; }
  const std::string& path() const { return path_; }
  int64_t size() const { return int64_t(items_.size()); }

 private:
  std::string name_, path_;
  std::vector<TokenizedItem> items_;
  uint32_t max_id_ = 0;
};

}  // namespace olmo::eval
