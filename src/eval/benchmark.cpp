// Held-out benchmark suites by ranked classification (see benchmark.h).
#include "eval/benchmark.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/error.h"
#include "core/file_io.h"
#include "core/timer.h"
#include "eval/jsonl_objects.h"

namespace olmo::eval {

std::vector<SuiteItem> load_suite(const std::string& path, int64_t max_items) {
  OLMO_CHECK(file_exists(path), path, ": benchmark suite file not found");
  std::vector<SuiteItem> out;
  for_each_json_object(path, "a suite item", [&](nlohmann::json& j, const std::string& at, int64_t) {
    SuiteItem it;
    OLMO_CHECK(j.contains("id") && j["id"].is_string(), at, "missing string field \"id\"");
    it.id = j["id"].get<std::string>();
    OLMO_CHECK(j.contains("context") && j["context"].is_string(), at,
               "missing string field \"context\"");
    it.context = j["context"].get<std::string>();
    OLMO_CHECK(j.contains("choices") && j["choices"].is_array() && j["choices"].size() >= 2, at,
               "field \"choices\" must be a list of >= 2 strings");
    for (auto& c : j["choices"]) {
      OLMO_CHECK(c.is_string() && !c.get<std::string>().empty(), at,
                 "every choice must be a non-empty string");
      it.choices.push_back(c.get<std::string>());
    }
    OLMO_CHECK(j.contains("gold") && j["gold"].is_number_integer(), at,
               "missing integer field \"gold\"");
    int64_t g = j["gold"].get<int64_t>();
    OLMO_CHECK(g >= 0 && g < int64_t(it.choices.size()), at, "gold = ", g,
               " is not a choice index in [0, ", it.choices.size(), ")");
    it.gold = int(g);
    out.push_back(std::move(it));
    return max_items <= 0 || int64_t(out.size()) < max_items;  // stop after the first max_items
  });
  OLMO_CHECK(!out.empty(), path, ": the suite holds no items");
  return out;
}

static std::string_view strip_space(const std::string& s) {
  std::string_view v(s);
  if (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  return v;
}

int64_t continuation_chars(const std::string& s) {
  int64_t n = 0;
  for (unsigned char c : strip_space(s)) n += (c & 0xC0) != 0x80;  // not a continuation byte
  return n;
}

int64_t continuation_bytes(const std::string& s) { return int64_t(strip_space(s).size()); }

double continuation_loglik(model::Olmo3& m, const std::vector<int32_t>& prefix,
                           const std::vector<int32_t>& cont, int64_t max_len, bool* truncated) {
  OLMO_CHECK(!cont.empty(), "continuation_loglik: empty continuation");
  OLMO_CHECK(!prefix.empty(), "continuation_loglik: empty prefix");
  OLMO_CHECK(int64_t(cont.size()) + 1 <= max_len, "continuation of ", cont.size(),
             " tokens does not fit max_len ", max_len);
  const int64_t total = int64_t(prefix.size() + cont.size());
  const int64_t drop = std::max<int64_t>(0, total - max_len);
  if (truncated) *truncated = drop > 0;
  std::vector<int32_t> seq(prefix.begin() + drop, prefix.end());
  seq.insert(seq.end(), cont.begin(), cont.end());
  const int64_t T = int64_t(seq.size()) - 1, first = int64_t(seq.size() - cont.size()) - 1;
  std::vector<int32_t> tgt(T, olmo::kIgnoreIndex);
  for (int64_t t = first; t < T; ++t) tgt[t] = seq[t + 1];
  kernels::LossSums s = m.forward_loss(seq.data(), tgt.data(), nullptr, 1, T, 0.0f);
  OLMO_CHECK(s.count == int64_t(cont.size()), "continuation_loglik: scored ", s.count,
             " positions, expected ", cont.size());
  return -s.ce_sum;
}

std::vector<double> continuation_logliks(model::Olmo3& m, const std::vector<int32_t>& prefix,
                                         const std::vector<std::vector<int32_t>>& conts,
                                         int64_t max_len, bool* truncated,
                                         int64_t max_logit_floats) {
  OLMO_CHECK(!prefix.empty(), "continuation_logliks: empty prefix");
  const int64_t V = m.config().vocab_size, n = int64_t(conts.size());
  if (truncated) *truncated = false;
  // Row i: the sequence prefix[drop_i:] + cont_i; scored positions first_i .. len_i - 2.
  std::vector<std::vector<int32_t>> rows(n);
  std::vector<int64_t> first(n);
  int64_t T = 1;
  for (int64_t i = 0; i < n; ++i) {
    const auto& c = conts[i];
    OLMO_CHECK(!c.empty(), "continuation_logliks: empty continuation ", i);
    OLMO_CHECK(int64_t(c.size()) + 1 <= max_len, "continuation of ", c.size(),
               " tokens does not fit max_len ", max_len);
    const int64_t drop = std::max<int64_t>(0, int64_t(prefix.size() + c.size()) - max_len);
    if (truncated && drop > 0) *truncated = true;
    rows[i].assign(prefix.begin() + drop, prefix.end());
    rows[i].insert(rows[i].end(), c.begin(), c.end());
    first[i] = int64_t(rows[i].size() - c.size()) - 1;
    T = std::max<int64_t>(T, int64_t(rows[i].size()) - 1);
  }
  const int64_t chunk = std::max<int64_t>(1, std::min<int64_t>(n, max_logit_floats / (T * V)));
  std::vector<double> out(n, 0.0);
  std::vector<int32_t> ids;
  std::vector<float> logits;
  for (int64_t r0 = 0; r0 < n; r0 += chunk) {
    const int64_t B = std::min(chunk, n - r0);
    ids.assign(B * T, rows[r0].back());  // padding: any valid id
    for (int64_t b = 0; b < B; ++b) {
      const auto& row = rows[r0 + b];
      std::copy(row.begin(), row.end() - 1, ids.begin() + b * T);
    }
    logits.resize(size_t(B * T * V));
    m.forward_logits(ids.data(), B, T, logits.data());
    // (row, position) pairs to score, then a parallel log-softmax over them.
    std::vector<std::pair<int64_t, int64_t>> at;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = first[r0 + b]; t + 1 < int64_t(rows[r0 + b].size()); ++t) at.push_back({b, t});
    std::vector<double> lp(at.size());
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < int64_t(at.size()); ++k) {
      const auto [b, t] = at[k];
      const float* z = logits.data() + (b * T + t) * V;
      float mx = z[0];
      for (int64_t v = 1; v < V; ++v) mx = std::max(mx, z[v]);
      double sum = 0;  // fp32 exp (rel. error ~1e-7), double accumulation
      for (int64_t v = 0; v < V; ++v) sum += double(std::exp(z[v] - mx));
      lp[k] = double(z[rows[r0 + b][t + 1]]) - double(mx) - std::log(sum);
    }
    for (size_t k = 0; k < at.size(); ++k) out[r0 + at[k].first] += lp[k];
  }
  return out;
}

static std::vector<int32_t> to_i32(const std::vector<uint32_t>& v) {
  return std::vector<int32_t>(v.begin(), v.end());
}

TokenizedItem tokenize_item(const SuiteItem& it, const tokenizer::Tokenizer& tok) {
  TokenizedItem t;
  t.id = it.id;
  t.gold = it.gold;
  t.prefix.push_back(int32_t(tok.eos_id()));
  for (uint32_t x : tok.encode(it.context)) t.prefix.push_back(int32_t(x));
  for (const auto& c : it.choices) {
    t.choices.push_back(to_i32(tok.encode(c)));
    OLMO_CHECK(!t.choices.back().empty(), "item ", it.id, ": a choice encodes to no tokens");
    t.chars.push_back(continuation_chars(c));
    t.bytes.push_back(continuation_bytes(c));
  }
  return t;
}

static int argmax(const std::vector<double>& v) {
  int best = 0;
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] > v[best]) best = int(i);
  return best;
}

ItemScore score_item(model::Olmo3& m, const TokenizedItem& it, int64_t max_len) {
  ItemScore s;
  s.id = it.id;
  s.gold = it.gold;
  std::vector<double> ll = continuation_logliks(m, it.prefix, it.choices, max_len, &s.truncated);
  std::vector<double> norm;
  for (size_t i = 0; i < it.choices.size(); ++i) {
    ChoiceScore c;
    c.ll = ll[i];
    c.tokens = int64_t(it.choices[i].size());
    c.chars = it.chars[i];
    c.bytes = it.bytes[i];
    norm.push_back(c.ll / double(std::max<int64_t>(1, c.chars)));
    s.choices.push_back(c);
  }
  s.pred = argmax(ll);
  s.pred_norm = argmax(norm);
  return s;
}

SuiteResult summarize(const std::string& name, std::vector<ItemScore> items) {
  SuiteResult r;
  r.name = name;
  r.items = int64_t(items.size());
  const double ln2 = std::log(2.0);
  for (const ItemScore& s : items) {
    const ChoiceScore& g = s.choices[s.gold];
    r.acc += s.pred == s.gold;
    r.acc_len_norm += s.pred_norm == s.gold;
    r.bpb += -g.ll / double(std::max<int64_t>(1, g.bytes)) / ln2;
    r.ce_loss += -g.ll / double(g.tokens);
    r.truncated += s.truncated;
    r.forwards += int64_t(s.choices.size());
  }
  if (r.items > 0) {
    r.acc /= double(r.items);
    r.acc_len_norm /= double(r.items);
    r.bpb /= double(r.items);
    r.ce_loss /= double(r.items);
  }
  r.per_item = std::move(items);
  return r;
}

BenchmarkSuite::BenchmarkSuite(std::string name, const std::string& path,
                               const tokenizer::Tokenizer& tok, int64_t max_items)
    : name_(std::move(name)), path_(path) {
  try {
    for (const SuiteItem& it : load_suite(path, max_items)) {
      items_.push_back(tokenize_item(it, tok));
      for (int32_t x : items_.back().prefix) max_id_ = std::max(max_id_, uint32_t(x));
      for (auto& c : items_.back().choices)
        for (int32_t x : c) max_id_ = std::max(max_id_, uint32_t(x));
    }
  } catch (const Error& e) {
    throw Error(cat("benchmark suite '", name_, "': ", e.what()));
  }
}

SuiteResult BenchmarkSuite::run(model::Olmo3& m, int64_t max_len) const {
  OLMO_CHECK(int64_t(max_id_) < m.config().vocab_size, "benchmark suite '", name_, "' (", path_,
             "): token id ", max_id_, " does not fit the model's vocab ", m.config().vocab_size);
  if (max_len <= 0) max_len = m.config().max_seq_len;
  const double t0 = now_seconds();
  std::vector<ItemScore> scores;
  int64_t tokens = 0;
  for (const TokenizedItem& it : items_) {
    scores.push_back(score_item(m, it, max_len));
    for (auto& c : it.choices)
      tokens += std::min<int64_t>(max_len, int64_t(it.prefix.size() + c.size())) - 1;
  }
  SuiteResult r = summarize(name_, std::move(scores));
  r.tokens = tokens;
  r.seconds = now_seconds() - t0;
  return r;
}

}  // namespace olmo::eval
