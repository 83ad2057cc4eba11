// Unigram token statistics for the data-loader audit: a dense histogram over the vocabulary,
// its plug-in entropy (bits) and top-token shares, and the comparison of a served sample with
// the corpus's own distribution (computed once by `olmo prepare`, see corpus/prepare.h).
// Cost: add() is one increment per token; entropy/top are O(vocab).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace olmo::audit {

class TokenHistogram {
 public:
  TokenHistogram() = default;
  explicit TokenHistogram(uint32_t vocab) : counts_(vocab, 0) {}
  void add(const int32_t* tokens, int64_t n);
  void add(const uint32_t* tokens, int64_t n);
  void add_count(uint32_t id, uint64_t count);
  void merge(const TokenHistogram& o);
  void clear();
  uint64_t total() const { return total_; }
  uint32_t vocab() const { return uint32_t(counts_.size()); }
  uint64_t count(uint32_t id) const { return id < counts_.size() ? counts_[id] : 0; }
  double share(uint32_t id) const { return total_ ? double(count(id)) / double(total_) : 0; }
  // -sum p log2 p over the observed tokens (0 for an empty histogram).
  double entropy_bits() const;
  // Miller-Madow bias-corrected estimate: entropy_bits() + (distinct - 1) / (2 N ln 2); the
  // plug-in value of a sample of N tokens is biased low by about that much.
  double entropy_bits_corrected() const;
  uint64_t distinct() const;
  // The k most frequent ids (ties: smaller id first) with their shares.
  std::vector<std::pair<uint32_t, double>> top(int k) const;

 private:
  std::vector<uint64_t> counts_;
  uint64_t total_ = 0;
};

// A served sample against the corpus: difference of the bias-corrected served entropy and the
// corpus entropy, and the largest share difference over the corpus's top-k tokens. ok() is false
// when either exceeds its tolerance.
struct DistributionCheck {
  double served_entropy = 0, corpus_entropy = 0;
  double max_share_diff = 0;
  uint32_t worst_token = 0;
  double worst_served = 0, worst_corpus = 0;
  bool entropy_ok = true, share_ok = true;
  bool ok() const { return entropy_ok && share_ok; }
  std::string describe() const;
};
DistributionCheck compare_distribution(const TokenHistogram& served, const TokenHistogram& corpus,
                                       double entropy_tol_bits, double share_tol, int top_k = 10);

}  // namespace olmo::audit
