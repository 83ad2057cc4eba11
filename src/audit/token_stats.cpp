// Unigram histograms and their comparison (see token_stats.h).
#include "audit/token_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"

namespace olmo::audit {

void TokenHistogram::add(const int32_t* t, int64_t n) {
  add(reinterpret_cast<const uint32_t*>(t), n);
}

void TokenHistogram::add(const uint32_t* t, int64_t n) {
  const size_t V = counts_.size();
  for (int64_t i = 0; i < n; ++i) {
    OLMO_CHECK(t[i] < V, "token histogram: id ", t[i], " >= vocab ", V);
    ++counts_[t[i]];
  }
  total_ += uint64_t(n);
}

void TokenHistogram::add_count(uint32_t id, uint64_t c) {
  OLMO_CHECK(id < counts_.size(), "token histogram: id ", id, " >= vocab ", counts_.size());
  counts_[id] += c;
  total_ += c;
}

void TokenHistogram::merge(const TokenHistogram& o) {
  if (counts_.size() < o.counts_.size()) counts_.resize(o.counts_.size(), 0);
  for (size_t i = 0; i < o.counts_.size(); ++i) counts_[i] += o.counts_[i];
  total_ += o.total_;
}

void TokenHistogram::clear() {
  std::fill(counts_.begin(), counts_.end(), 0);
  total_ = 0;
}

double TokenHistogram::entropy_bits() const {
  if (!total_) return 0;
  double H = 0, N = double(total_);
  for (uint64_t c : counts_)
    if (c) {
      double p = double(c) / N;
      H -= p * std::log2(p);
    }
  return H;
}

uint64_t TokenHistogram::distinct() const {
  uint64_t n = 0;
  for (uint64_t c : counts_) n += c != 0;
  return n;
}

double TokenHistogram::entropy_bits_corrected() const {
  if (!total_) return 0;
  return entropy_bits() + double(distinct() - 1) / (2.0 * double(total_) * std::log(2.0));
}

std::vector<std::pair<uint32_t, double>> TokenHistogram::top(int k) const {
  std::vector<uint32_t> ids;
  for (uint32_t i = 0; i < counts_.size(); ++i)
    if (counts_[i]) ids.push_back(i);
  auto cmp = [&](uint32_t a, uint32_t b) {
    return counts_[a] != counts_[b] ? counts_[a] > counts_[b] : a < b;
  };
  size_t m = std::min<size_t>(ids.size(), size_t(std::max(k, 0)));
  std::partial_sort(ids.begin(), ids.begin() + m, ids.end(), cmp);
  std::vector<std::pair<uint32_t, double>> out;
  for (size_t i = 0; i < m; ++i) out.push_back({ids[i], share(ids[i])});
  return out;
}

std::string DistributionCheck::describe() const {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "served unigram entropy %.3f bits (bias-corrected) vs corpus %.3f; token %u share %.4f vs %.4f",
                served_entropy, corpus_entropy, worst_token, worst_served, worst_corpus);
  return buf;
}

DistributionCheck compare_distribution(const TokenHistogram& served, const TokenHistogram& corpus,
                                       double entropy_tol_bits, double share_tol, int top_k) {
  DistributionCheck c;
  c.served_entropy = served.entropy_bits_corrected();
  c.corpus_entropy = corpus.entropy_bits();
  c.entropy_ok = std::fabs(c.served_entropy - c.corpus_entropy) <= entropy_tol_bits;
  for (auto& [id, cs] : corpus.top(top_k)) {
    double ss = served.share(id);
    double d = std::fabs(ss - cs);
    if (d >= c.max_share_diff) {
      c.max_share_diff = d;
      c.worst_token = id;
      c.worst_served = ss;
      c.worst_corpus = cs;
    }
  }
  c.share_ok = c.max_share_diff <= share_tol;
  return c;
}

}  // namespace olmo::audit
