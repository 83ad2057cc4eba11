// Corpus deduplication (see dedup.h): the fast path (parallel signatures, LSH buckets, greedy
// removal in document order) and the slow reference (all pairs, exact Jaccard).
#include "corpus/dedup.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <set>
#include <thread>

#include "core/error.h"
#include "core/hash.h"
#include "core/timer.h"
#include "corpus/prepare.h"

namespace olmo::corpus {

std::string normalize_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool space = false;
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c;
  }
  return out;
}

void word_tokens(std::string_view text, std::vector<uint32_t>& out) {
  size_t i = 0;
  auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
  while (i < text.size()) {
    while (i < text.size() && ws(text[i])) ++i;
    size_t b = i;
    while (i < text.size() && !ws(text[i])) ++i;
    if (i > b) out.push_back(uint32_t(hash64(text.data() + b, i - b, 0x776f7264ull)));
  }
}

double lsh_detection_probability(double j, int bands, int rows) {
  return 1.0 - std::pow(1.0 - std::pow(j, rows), bands);
}

namespace {

constexpr int kMaxCompare = 64;  // earlier bucket members a document is compared with

void check_options(const std::vector<DedupDoc>& docs, const DedupOptions& opt) {
  OLMO_CHECK(opt.bands >= 1 && opt.rows >= 1 && opt.bands * opt.rows <= 1024,
             "dedup: bands x rows must be in [1, 1024], got ", opt.bands, " x ", opt.rows);
  OLMO_CHECK(opt.jaccard > 0 && opt.jaccard <= 1, "dedup: jaccard threshold must be in (0, 1]");
  OLMO_CHECK(opt.containment > 0 && opt.containment <= 1,
             "dedup: containment threshold must be in (0, 1]");
  OLMO_CHECK(opt.sample >= 1, "dedup: sample must be >= 1");
  bool train_seen = false;
  for (auto& d : docs) {
    OLMO_CHECK(!(d.heldout && train_seen), "dedup: held-out documents must precede training ones");
    train_seen |= !d.heldout;
  }
}

void tokens_of(const DedupOptions& opt, std::string_view text, std::vector<uint32_t>& out) {
  out.clear();
  if (opt.tokenize) opt.tokenize(text, out);
  else word_tokens(text, out);
}

// Shingles: the 13-gram hashes of the document (as `olmo prepare` hashes them), or one hash of
// the whole token sequence when it is shorter than 13 tokens; none for an empty document.
template <class F>
void for_each_shingle(const std::vector<uint32_t>& t, F&& f) {
  if (t.empty()) return;
  if (t.size() < size_t(kNgram)) {
    f(doc_hash(t.data(), t.size()));
    return;
  }
  for (size_t k = 0; k + kNgram <= t.size(); ++k) f(ngram_hash(t.data() + k));
}

// Sampled 13-gram windows (with repeats), the audit's view of a document.
void sampled_windows(const std::vector<uint32_t>& t, uint32_t sample, std::vector<uint64_t>& out) {
  out.clear();
  for (size_t k = 0; k + kNgram <= t.size(); ++k) {
    uint64_t g = ngram_hash(t.data() + k);
    if (g % sample == 0) out.push_back(g);
  }
}

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

int thread_count(const DedupOptions& opt) {
  return opt.threads > 0 ? opt.threads : int(std::max(1u, std::thread::hardware_concurrency()));
}

// Rule 1, shared: exact clusters of equal normalised text; every member but the first is removed
// if it is training text. `hash` is XXH3 of the normalised text (the fast grouping key).
void exact_rule(const std::vector<DedupDoc>& docs, const std::vector<uint64_t>& hash,
                DedupResult& r) {
  std::vector<std::pair<uint64_t, uint32_t>> order(docs.size());
  for (size_t i = 0; i < docs.size(); ++i) order[i] = {hash[i], uint32_t(i)};
  std::sort(order.begin(), order.end());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j < order.size() && order[j].first == order[i].first) ++j;
    if (j - i > 1) {
      std::vector<std::string> norm;
      for (size_t k = i; k < j; ++k) norm.push_back(normalize_text(docs[order[k].second].text));
      for (size_t k = i + 1; k < j; ++k) {
        uint32_t d = order[k].second;
        if (docs[d].heldout) continue;
        for (size_t e = i; e < k; ++e)  // the earliest equal document (indices ascend in a group)
          if (norm[e - i] == norm[k - i]) {
            r.removed[d] = 1;
            r.removals.push_back({d, "exact", order[e].second, 1.0, 0});
            ++r.exact;
            break;
          }
      }
    }
    i = j;
  }
}

// Rule 3, shared: the audit's held-out contamination rule, greedy. windows[h]: the held-out
// document's sampled windows as ids (with repeats); has(T, id): training document T holds the
// sampled 13-gram id; holders[id]: training documents that hold it (ascending).
template <class Has>
void heldout_rule(const std::vector<std::vector<uint32_t>>& windows,
                  const std::vector<std::vector<uint32_t>>& holders, Has&& has,
                  const DedupOptions& opt, DedupResult& r) {
  for (size_t h = 0; h < windows.size(); ++h) {
    const auto& w = windows[h];
    if (w.size() < 3) continue;
    auto covered = [&] {
      size_t c = 0;
      for (uint32_t g : w)
        for (uint32_t T : holders[g])
          if (!r.removed[T]) {
            ++c;
            break;
          }
      return c;
    };
    for (size_t c = covered(); double(c) >= opt.containment * double(w.size()); c = covered()) {
      std::set<uint32_t> cand;
      for (uint32_t g : w)
        for (uint32_t T : holders[g])
          if (!r.removed[T]) cand.insert(T);
      uint32_t best = 0;
      size_t best_n = 0;
      for (uint32_t T : cand) {  // ascending: ties go to the earlier document
        size_t n = 0;
        for (uint32_t g : w) n += has(T, g);
        if (n > best_n) best = T, best_n = n;
      }
      OLMO_CHECK(best_n > 0, "dedup: internal error in the held-out rule");
      r.removed[best] = 1;
      r.removals.push_back({best, "heldout", h, 0, double(best_n) / double(w.size())});
      ++r.heldout;
    }
  }
}

void finish(DedupResult& r) {
  std::sort(r.removals.begin(), r.removals.end(),
            [](const Removal& a, const Removal& b) { return a.doc < b.doc; });
}

}  // namespace

DedupResult dedup(const std::vector<DedupDoc>& docs, const DedupOptions& opt) {
  check_options(docs, opt);
  const double t0 = now_seconds();
  const size_t n = docs.size();
  const int K = opt.bands * opt.rows, threads = thread_count(opt);
  size_t H = 0;
  while (H < n && docs[H].heldout) ++H;
  DedupResult r;
  r.removed.assign(n, 0);
  if (!opt.enabled || n == 0) return r;

  std::vector<uint64_t> a(K), b(K);
  uint64_t s = opt.seed;
  for (int i = 0; i < K; ++i) a[i] = splitmix(s) | 1, b[i] = splitmix(s);

  std::vector<uint64_t> norm_hash(n);
  std::vector<uint32_t> sig(n * size_t(K));
  std::vector<uint8_t> empty(n, 0);
  std::vector<std::vector<uint64_t>> hwin(H);       // held-out sampled windows (hashes)
  std::vector<std::vector<uint32_t>> hits(n - H);   // training: held-out gram ids it holds
  std::vector<uint64_t> hgrams;                     // sorted unique held-out sampled grams
  std::exception_ptr err;
  // Pass A over held-out documents, then pass B over training documents (B needs hgrams).
  for (int pass = 0; pass < 2; ++pass) {
    const long lo = pass == 0 ? 0 : long(H), hi = pass == 0 ? long(H) : long(n);
#pragma omp parallel num_threads(threads)
    {
      std::vector<uint32_t> t;
      std::vector<uint64_t> win;
#pragma omp for schedule(dynamic, 64)
      for (long i = lo; i < hi; ++i) {
        try {
          std::string norm = normalize_text(docs[i].text);
          norm_hash[i] = hash64(norm.data(), norm.size(), 0x6e6f726dull);
          tokens_of(opt, docs[i].text, t);
          uint32_t* out = &sig[size_t(i) * K];
          std::fill(out, out + K, UINT32_MAX);
          empty[i] = t.empty();
          for_each_shingle(t, [&](uint64_t g) {
            for (int k = 0; k < K; ++k) out[k] = std::min(out[k], uint32_t((a[k] * g + b[k]) >> 32));
          });
          sampled_windows(t, opt.sample, win);
          if (pass == 0) {
            hwin[i] = win;
          } else {
            auto& h = hits[i - H];
            for (uint64_t g : win) {
              auto it = std::lower_bound(hgrams.begin(), hgrams.end(), g);
              if (it != hgrams.end() && *it == g) h.push_back(uint32_t(it - hgrams.begin()));
            }
            std::sort(h.begin(), h.end());
            h.erase(std::unique(h.begin(), h.end()), h.end());
          }
        } catch (...) {
#pragma omp critical
          if (!err) err = std::current_exception();
        }
      }
    }
    if (err) std::rethrow_exception(err);
    if (pass == 0) {
      for (auto& w : hwin) hgrams.insert(hgrams.end(), w.begin(), w.end());
      std::sort(hgrams.begin(), hgrams.end());
      hgrams.erase(std::unique(hgrams.begin(), hgrams.end()), hgrams.end());
    }
  }
  const double t1 = now_seconds();
  r.seconds_sign = t1 - t0;

  // Rule 1: exact.
  exact_rule(docs, norm_hash, r);

  // Rule 2: near, via LSH buckets. Edges (later d, earlier e, estimated J >= threshold).
  struct Edge {
    uint32_t d, e;
    float j;
  };
  auto est = [&](size_t x, size_t y) {
    const uint32_t *p = &sig[x * K], *q = &sig[y * K];
    int eq = 0;
    for (int k = 0; k < K; ++k) eq += p[k] == q[k];
    return double(eq) / K;
  };
  std::vector<std::vector<Edge>> band_edges(opt.bands);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (int band = 0; band < opt.bands; ++band) {
    std::vector<std::pair<uint64_t, uint32_t>> keys;
    keys.reserve(n);
    for (size_t i = 0; i < n; ++i)
      if (!r.removed[i] && !empty[i])
        keys.push_back({hash64(&sig[i * K + size_t(band) * opt.rows], opt.rows * 4, uint64_t(band)),
                        uint32_t(i)});
    std::sort(keys.begin(), keys.end());
    auto& out = band_edges[band];
    for (size_t i = 0; i < keys.size();) {
      size_t j = i;
      while (j < keys.size() && keys[j].first == keys[i].first) ++j;
      for (size_t p = i + 1; p < j; ++p) {
        uint32_t d = keys[p].second;
        if (docs[d].heldout) continue;
        for (size_t q = i; q < p && q < i + kMaxCompare; ++q) {
          double jj = est(d, keys[q].second);
          if (jj >= opt.jaccard) out.push_back({d, keys[q].second, float(jj)});
        }
      }
      i = j;
    }
  }
  std::vector<Edge> edges;
  for (auto& v : band_edges) edges.insert(edges.end(), v.begin(), v.end());
  band_edges.clear();
  std::sort(edges.begin(), edges.end(),
            [](const Edge& x, const Edge& y) { return x.d != y.d ? x.d < y.d : x.e < y.e; });
  for (size_t i = 0; i < edges.size();) {
    size_t j = i;
    while (j < edges.size() && edges[j].d == edges[i].d) ++j;
    for (size_t k = i; k < j; ++k)
      if (!r.removed[edges[k].e]) {
        r.removed[edges[k].d] = 1;
        r.removals.push_back({edges[k].d, "near", edges[k].e, double(edges[k].j), 0});
        ++r.near;
        break;
      }
    i = j;
  }

  // Rule 3: held-out overlap (the audit's contamination rule).
  std::vector<std::vector<uint32_t>> windows(H), holders(hgrams.size());
  for (size_t h = 0; h < H; ++h)
    for (uint64_t g : hwin[h])
      windows[h].push_back(uint32_t(std::lower_bound(hgrams.begin(), hgrams.end(), g) - hgrams.begin()));
  for (size_t i = H; i < n; ++i)
    for (uint32_t g : hits[i - H]) holders[g].push_back(uint32_t(i));
  heldout_rule(windows, holders,
               [&](uint32_t T, uint32_t g) {
                 auto& h = hits[T - H];
                 return std::binary_search(h.begin(), h.end(), g);
               },
               opt, r);
  finish(r);
  r.seconds_match = now_seconds() - t1;
  return r;
}

DedupResult dedup_reference(const std::vector<DedupDoc>& docs, const DedupOptions& opt) {
  check_options(docs, opt);
  const double t0 = now_seconds();
  const size_t n = docs.size();
  size_t H = 0;
  while (H < n && docs[H].heldout) ++H;
  DedupResult r;
  r.removed.assign(n, 0);
  if (!opt.enabled || n == 0) return r;

  std::vector<std::set<uint64_t>> shingles(n);
  std::vector<std::vector<uint64_t>> windows(n);
  std::vector<uint32_t> t;
  for (size_t i = 0; i < n; ++i) {
    tokens_of(opt, docs[i].text, t);
    for_each_shingle(t, [&](uint64_t g) { shingles[i].insert(g); });
    sampled_windows(t, opt.sample, windows[i]);
  }
  r.seconds_sign = now_seconds() - t0;

  // Rule 1: a training document equal (normalised) to an earlier one that is not itself an
  // exact duplicate.
  std::vector<std::string> norm(n);
  for (size_t i = 0; i < n; ++i) norm[i] = normalize_text(docs[i].text);
  for (size_t d = H; d < n; ++d)
    for (size_t e = 0; e < d; ++e)
      if (norm[e] == norm[d] && !r.removed[e]) {
        r.removed[d] = 1;
        r.removals.push_back({d, "exact", e, 1.0, 0});
        ++r.exact;
        break;
      }
  // Rule 2: the first earlier kept document with exact Jaccard >= threshold.
  for (size_t d = H; d < n; ++d) {
    if (r.removed[d] || shingles[d].empty()) continue;
    for (size_t e = 0; e < d; ++e) {
      if (r.removed[e] || shingles[e].empty()) continue;
      size_t common = 0;
      for (uint64_t g : shingles[d]) common += shingles[e].count(g);
      double j = double(common) / double(shingles[d].size() + shingles[e].size() - common);
      if (j >= opt.jaccard) {
        r.removed[d] = 1;
        r.removals.push_back({d, "near", e, j, 0});
        ++r.near;
        break;
      }
    }
  }
  // Rule 3: the same greedy over plain sets of sampled 13-grams.
  std::vector<uint64_t> ids;  // held-out gram id -> hash
  for (size_t h = 0; h < H; ++h) ids.insert(ids.end(), windows[h].begin(), windows[h].end());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  auto id_of = [&](uint64_t g) { return uint32_t(std::lower_bound(ids.begin(), ids.end(), g) - ids.begin()); };
  std::vector<std::set<uint64_t>> train_sets(n);
  for (size_t i = H; i < n; ++i) train_sets[i].insert(windows[i].begin(), windows[i].end());
  std::vector<std::vector<uint32_t>> hw(H), holders(ids.size());
  for (size_t h = 0; h < H; ++h)
    for (uint64_t g : windows[h]) hw[h].push_back(id_of(g));
  for (size_t g = 0; g < ids.size(); ++g)
    for (size_t i = H; i < n; ++i)
      if (train_sets[i].count(ids[g])) holders[g].push_back(uint32_t(i));
  heldout_rule(hw, holders, [&](uint32_t T, uint32_t g) { return train_sets[T].count(ids[g]) > 0; },
               opt, r);
  finish(r);
  r.seconds_match = now_seconds() - t0 - r.seconds_sign;
  return r;
}

}  // namespace olmo::corpus
