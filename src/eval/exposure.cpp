// Canary exposure (see exposure.h).
#include "eval/exposure.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.h"
#include "core/file_io.h"
#include "core/timer.h"
#include "eval/benchmark.h"

namespace olmo::eval {

std::vector<CanarySpec> load_canaries(const std::string& path) {
  OLMO_CHECK(file_exists(path), path, ": canary file not found");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw Error(cat(path, ": not valid JSON: ", e.what()));
  }
  OLMO_CHECK(j.is_array() && !j.empty(), path, ": expected a non-empty list of canaries");
  std::vector<CanarySpec> out;
  std::set<std::string> names;
  for (size_t i = 0; i < j.size(); ++i) {
    const auto& e = j[i];
    const std::string at = cat(path, ": canary ", i, ": ");
    OLMO_CHECK(e.is_object(), at, "not a JSON object");
    CanarySpec c;
    for (auto [k, dst] : {std::pair<const char*, std::string*>{"name", &c.name},
                          {"prefix", &c.prefix}, {"secret", &c.secret}}) {
      OLMO_CHECK(e.contains(k) && e[k].is_string(), at, "missing string field \"", k, "\"");
      *dst = e[k].get<std::string>();
    }
    if (e.contains("text")) {
      OLMO_CHECK(e["text"].is_string(), at, "field \"text\" is not a string");
      c.text = e["text"].get<std::string>();
    }
    OLMO_CHECK(e.contains("count") && e["count"].is_number_integer() && e["count"] >= 0, at,
               "missing non-negative integer field \"count\"");
    c.count = e["count"].get<int>();
    OLMO_CHECK(!c.secret.empty() && std::all_of(c.secret.begin(), c.secret.end(),
                                                [](char d) { return d >= '0' && d <= '9'; }),
               at, "secret '", c.secret, "' is not a string of digits");
    OLMO_CHECK(c.secret.size() == (out.empty() ? c.secret.size() : out[0].secret.size()), at,
               "secret length ", c.secret.size(), " differs from the first canary's ",
               out[0].secret.size());
    OLMO_CHECK(names.insert(c.name).second, at, "duplicate canary name '", c.name, "'");
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<CanarySpec> take_per_count(const std::vector<CanarySpec>& all, int64_t per_count) {
  if (per_count <= 0) return all;
  std::map<int, int64_t> seen;
  std::vector<CanarySpec> out;
  for (const auto& c : all)
    if (seen[c.count]++ < per_count) out.push_back(c);
  return out;
}

std::string secret_text(const std::string& secret) {
  std::string s;
  for (char d : secret) s += std::string(" ") + d;
  return s;
}

std::vector<std::string> reference_secrets(const std::vector<CanarySpec>& all, int64_t n,
                                           uint64_t seed) {
  OLMO_CHECK(!all.empty(), "reference_secrets: no canaries");
  const size_t len = all[0].secret.size();
  std::set<std::string> used;
  for (const auto& c : all)
    if (c.count > 0) used.insert(c.secret);
  std::vector<std::string> out;
  for (const auto& c : all)
    if (c.count == 0 && int64_t(out.size()) < n && used.insert(c.secret).second)
      out.push_back(c.secret);
  uint64_t s = seed;
  auto next = [&s] {  // splitmix64
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  while (int64_t(out.size()) < n) {
    std::string r;
    for (size_t d = 0; d < len; ++d) r += char('0' + next() % 10);  // bias < 1e-18: negligible
    if (used.insert(r).second) out.push_back(r);
  }
  return out;
}

double exposure_from_scores(double ll_canary, const std::vector<double>& ll_refs, int64_t* rank) {
  int64_t r = 1;
  for (double x : ll_refs) r += x > ll_canary;
  if (rank) *rank = r;
  return std::log2(double(ll_refs.size() + 1)) - std::log2(double(r));
}

static std::vector<int32_t> encode_i32(const tokenizer::Tokenizer& tok, const std::string& s) {
  std::vector<int32_t> v;
  for (uint32_t x : tok.encode(s)) v.push_back(int32_t(x));
  return v;
}

ExposureEvaluator::ExposureEvaluator(const std::string& canaries_path, const tokenizer::Tokenizer& tok,
                                     int64_t candidates, int64_t per_count)
    : path_(canaries_path), candidates_(candidates) {
  OLMO_CHECK(candidates >= 2, canaries_path, ": exposure needs >= 2 candidates per canary, got ",
             candidates);
  std::vector<CanarySpec> all = load_canaries(canaries_path);
  // One more than needed so that a control can skip its own secret.
  std::vector<std::string> refs = reference_secrets(all, candidates);
  for (const CanarySpec& c : take_per_count(all, per_count)) {
    Item it;
    it.spec = c;
    it.prefix.push_back(int32_t(tok.eos_id()));
    for (int32_t x : encode_i32(tok, c.prefix)) it.prefix.push_back(x);
    it.secret = encode_i32(tok, secret_text(c.secret));
    if (!c.text.empty()) {
      std::vector<int32_t> whole = encode_i32(tok, c.text);
      std::vector<int32_t> parts(it.prefix.begin() + 1, it.prefix.end());
      parts.insert(parts.end(), it.secret.begin(), it.secret.end());
      OLMO_CHECK(whole == parts, canaries_path, ": canary '", c.name,
                 "': its text does not tokenize as prefix + secret (", whole.size(), " vs ",
                 parts.size(), " tokens); the scored tokens would differ from the trained ones");
    }
    for (const std::string& r : refs) {
      if (int64_t(it.refs.size()) + 1 >= candidates) break;
      if (r == c.secret) continue;
      it.refs.push_back(r);
      it.ref_tokens.push_back(encode_i32(tok, secret_text(r)));
    }
    for (int32_t x : it.prefix) max_id_ = std::max(max_id_, uint32_t(x));
    for (int32_t x : it.secret) max_id_ = std::max(max_id_, uint32_t(x));
    items_.push_back(std::move(it));
  }
}

ExposureResult ExposureEvaluator::run(model::Olmo3& m) const {
  OLMO_CHECK(int64_t(max_id_) < m.config().vocab_size, path_, ": token id ", max_id_,
             " does not fit the model's vocab ", m.config().vocab_size);
  const double t0 = now_seconds();
  const int64_t max_len = m.config().max_seq_len;
  ExposureResult r;
  r.candidates = candidates_;
  for (const Item& it : items_) {
    CanaryExposure e;
    e.name = it.spec.name;
    e.count = it.spec.count;
    std::vector<std::vector<int32_t>> conts = {it.secret};
    conts.insert(conts.end(), it.ref_tokens.begin(), it.ref_tokens.end());
    std::vector<double> ll = continuation_logliks(m, it.prefix, conts, max_len);
    e.ll = ll[0];
    e.ref_ll.assign(ll.begin() + 1, ll.end());
    e.refs = it.refs;
    e.candidates = int64_t(it.refs.size()) + 1;
    e.exposure = exposure_from_scores(e.ll, e.ref_ll, &e.rank);
    r.forwards += e.candidates;
    r.canaries.push_back(std::move(e));
  }
  for (const CanaryExposure& e : r.canaries) {
    CountExposure& c = r.by_count[e.count];
    c.min = c.canaries ? std::min(c.min, e.exposure) : e.exposure;
    c.max = c.canaries ? std::max(c.max, e.exposure) : e.exposure;
    c.mean += e.exposure;
    ++c.canaries;
  }
  for (auto& [k, c] : r.by_count) c.mean /= double(c.canaries);
  r.seconds = now_seconds() - t0;
  return r;
}

}  // namespace olmo::eval
