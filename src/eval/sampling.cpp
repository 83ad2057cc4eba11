// Greedy / temperature / top-k / top-p token choice (see sampling.h).
#include "eval/sampling.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace olmo::eval {

void validate(const SamplingParams& p) {
  OLMO_CHECK(std::isfinite(p.temperature) && p.temperature >= 0,
             "sampling: temperature must be >= 0 (0 = greedy), got ", p.temperature);
  OLMO_CHECK(p.top_k >= 0, "sampling: top_k must be >= 0 (0 = off), got ", p.top_k);
  OLMO_CHECK(p.top_p > 0 && p.top_p <= 1, "sampling: top_p must be in (0, 1] (1 = off), got ",
             p.top_p);
}

int64_t argmax(const float* x, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (x[i] > x[best] || (std::isnan(x[best]) && !std::isnan(x[i]))) best = i;
  return best;
}

namespace {
uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
}  // namespace

Sampler::Sampler(const SamplingParams& p, uint64_t stream) : p_(p) {
  validate(p);
  uint64_t s = p.seed ^ (stream * 0xd1b54a32d192ed03ull);
  state_ = splitmix64(s);
}

double Sampler::uniform() { return double(splitmix64(state_) >> 11) * 0x1.0p-53; }

int64_t Sampler::next(const float* logits, int64_t n) {
  OLMO_CHECK(n > 0, "sampling: empty logits row");
  if (p_.greedy()) return argmax(logits, n);
  const float inv_t = float(1.0 / p_.temperature);
  cand_.clear();
  for (int64_t i = 0; i < n; ++i)
    if (!std::isnan(logits[i])) cand_.emplace_back(logits[i] * inv_t, int32_t(i));
  OLMO_CHECK(!cand_.empty(), "sampling: every logit is NaN");
  auto desc = [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  if (p_.top_k > 0 && p_.top_k < int64_t(cand_.size())) {
    std::nth_element(cand_.begin(), cand_.begin() + (p_.top_k - 1), cand_.end(), desc);
    const float kth = cand_[size_t(p_.top_k - 1)].first;
    // transformers removes logits < the k-th largest value: ties with it stay.
    cand_.erase(std::remove_if(cand_.begin(), cand_.end(),
                               [&](const auto& c) { return c.first < kth; }),
                cand_.end());
  }
  const bool nucleus = p_.top_p < 1;
  if (nucleus) std::sort(cand_.begin(), cand_.end(), desc);
  float mx = -INFINITY;
  for (auto& c : cand_) mx = std::max(mx, c.first);
  prob_.resize(cand_.size());
  double total = 0;
  for (size_t i = 0; i < cand_.size(); ++i) total += (prob_[i] = std::exp(double(cand_[i].first - mx)));
  size_t keep = cand_.size();
  if (nucleus) {
    double before = 0;
    for (keep = 0; keep < cand_.size(); ++keep) {
      if (keep > 0 && before >= p_.top_p * total) break;
      before += prob_[keep];
    }
    total = before;
  }
  double u = uniform() * total, acc = 0;
  for (size_t i = 0; i < keep; ++i) {
    acc += prob_[i];
    if (u < acc) return cand_[i].second;
  }
  return cand_[keep - 1].second;  // u rounded up to total
}

}  // namespace olmo::eval
