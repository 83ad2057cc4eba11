// Byte-level BPE: hash tables for token bytes and mergeable pairs, and the merge loops
// (small-piece rescan, large-piece heap, and the slow reference).
#include "tokenizer/bpe.h"

#include <algorithm>
#include <cstring>
#include <queue>

#include "core/error.h"
#include "core/hash.h"

namespace olmo::tokenizer {
namespace {

inline uint64_t mix64(uint64_t k) {  // splitmix64 finaliser
  k ^= k >> 30;
  k *= 0xbf58476d1ce4e5b9ull;
  k ^= k >> 27;
  k *= 0x94d049bb133111ebull;
  return k ^ (k >> 31);
}

uint64_t pow2_at_least(uint64_t n) {
  uint64_t c = 16;
  while (c < n) c <<= 1;
  return c;
}

}  // namespace

void BpeModel::build_tokens(std::vector<std::string> tokens, const std::string& where) {
  offsets_.assign(tokens.size() + 1, 0);
  size_t total = 0;
  for (auto& t : tokens) total += t.size();
  arena_.reserve(total);
  for (size_t i = 0; i < tokens.size(); ++i) {
    arena_ += tokens[i];
    offsets_[i + 1] = uint32_t(arena_.size());
  }
  piece_tab_.assign(pow2_at_least(tokens.size() * 2), kNoToken);
  piece_mask_ = piece_tab_.size() - 1;
  for (uint32_t id = 0; id < tokens.size(); ++id) {
    if (tokens[id].empty()) continue;
    std::string_view b = token_bytes(id);
    uint64_t h = hash64(b.data(), b.size()) & piece_mask_;
    while (piece_tab_[h] != kNoToken) {
      OLMO_CHECK(token_bytes(piece_tab_[h]) != b, where, ": token id ", id,
                 " has the same bytes as id ", piece_tab_[h]);
      h = (h + 1) & piece_mask_;
    }
    piece_tab_[h] = id;
  }
  for (int c = 0; c < 256; ++c) {
    char ch = char(c);
    byte_id_[c] = lookup(std::string_view(&ch, 1));
    OLMO_CHECK(byte_id_[c] != kNoToken, where, ": no token for the single byte 0x", std::hex, c,
               " (a byte-level BPE vocabulary needs all 256)");
  }
}

uint32_t BpeModel::lookup(std::string_view b) const {
  uint64_t h = hash64(b.data(), b.size()) & piece_mask_;
  for (;;) {
    uint32_t id = piece_tab_[h];
    if (id == kNoToken) return kNoToken;
    if (offsets_[id + 1] - offsets_[id] == b.size() &&
        std::memcmp(arena_.data() + offsets_[id], b.data(), b.size()) == 0)
      return id;
    h = (h + 1) & piece_mask_;
  }
}

void BpeModel::reserve_pairs(size_t n) {
  pair_keys_.assign(pow2_at_least(n * 2), ~uint64_t(0));
  pair_vals_.assign(pair_keys_.size(), {kNoToken, kNoToken});
  pair_mask_ = pair_keys_.size() - 1;
  pair_count_ = 0;
}

void BpeModel::add_pair(uint32_t a, uint32_t b, uint32_t prio, uint32_t id) {
  uint64_t key = uint64_t(a) << 32 | b;
  uint64_t h = mix64(key) & pair_mask_;
  while (pair_keys_[h] != ~uint64_t(0) && pair_keys_[h] != key) h = (h + 1) & pair_mask_;
  if (pair_keys_[h] == ~uint64_t(0)) ++pair_count_;
  pair_keys_[h] = key;  // a repeated pair keeps the last entry (HF's merge map does the same)
  pair_vals_[h] = {prio, id};
}

inline BpeModel::PairVal BpeModel::pair(uint32_t a, uint32_t b) const {
  uint64_t key = uint64_t(a) << 32 | b;
  uint64_t h = mix64(key) & pair_mask_;
  for (;;) {
    uint64_t k = pair_keys_[h];
    if (k == key) return pair_vals_[h];
    if (k == ~uint64_t(0)) return {kNoToken, kNoToken};
    h = (h + 1) & pair_mask_;
  }
}

BpeModel BpeModel::from_ranks(std::vector<std::string> tokens, const std::string& where) {
  BpeModel m;
  m.build_tokens(std::move(tokens), where);
  m.ranks_mode_ = m.whole_lookup_ = true;
  // Every split of a token into two tokens is a mergeable pair with priority = its rank.
  size_t n_pairs = 0;
  for (uint32_t id = 0; id < m.size(); ++id) n_pairs += m.token_bytes(id).size();
  m.reserve_pairs(n_pairs);
  for (uint32_t id = 0; id < m.size(); ++id) {
    std::string_view t = m.token_bytes(id);
    for (size_t k = 1; k < t.size(); ++k) {
      uint32_t a = m.lookup(t.substr(0, k)), b = m.lookup(t.substr(k));
      if (a != kNoToken && b != kNoToken) m.add_pair(a, b, id, id);
    }
  }
  return m;
}

BpeModel BpeModel::from_merges(std::vector<std::string> tokens,
                               const std::vector<std::pair<uint32_t, uint32_t>>& merges,
                               bool ignore_merges, const std::string& where) {
  BpeModel m;
  m.build_tokens(std::move(tokens), where);
  m.ranks_mode_ = false;
  m.whole_lookup_ = ignore_merges;
  m.reserve_pairs(merges.size());
  std::string cat_bytes;
  for (size_t i = 0; i < merges.size(); ++i) {
    auto [a, b] = merges[i];
    OLMO_CHECK(m.is_token(a) && m.is_token(b), where, ": merge ", i, " refers to unknown ids");
    cat_bytes.assign(m.token_bytes(a));
    cat_bytes += m.token_bytes(b);
    uint32_t id = m.lookup(cat_bytes);
    OLMO_CHECK(id != kNoToken, where, ": merge ", i, " (ids ", a, " ", b,
               ") produces bytes that are not in the vocabulary");
    m.add_pair(a, b, uint32_t(i), id);
  }
  return m;
}

void BpeModel::encode_piece(const uint8_t* p, size_t n, std::vector<uint32_t>& out) const {
  if (n == 1) {
    out.push_back(byte_id_[p[0]]);
    return;
  }
  if (whole_lookup_) {
    uint32_t id = lookup(std::string_view(reinterpret_cast<const char*>(p), n));
    if (id != kNoToken) {
      out.push_back(id);
      return;
    }
  }
  if (n <= 48)
    merge_small(p, n, out);
  else
    merge_large(p, n, out);
}

// Rescan: parts ids[0..m), prio[i] = priority of merging parts i and i+1.
void BpeModel::merge_small(const uint8_t* p, size_t n, std::vector<uint32_t>& out) const {
  uint32_t ids[48], prio[48], res[48];
  size_t m = n;
  for (size_t i = 0; i < n; ++i) ids[i] = byte_id_[p[i]];
  for (size_t i = 0; i + 1 < m; ++i) {
    PairVal v = pair(ids[i], ids[i + 1]);
    prio[i] = v.prio, res[i] = v.id;
  }
  while (m > 1) {
    size_t best = 0;
    uint32_t bp = prio[0];
    for (size_t i = 1; i + 1 < m; ++i)
      if (prio[i] < bp) bp = prio[i], best = i;
    if (bp == kNoToken) break;
    ids[best] = res[best];
    for (size_t i = best + 1; i + 1 < m; ++i) ids[i] = ids[i + 1];
    for (size_t i = best + 1; i + 2 < m; ++i) prio[i] = prio[i + 1], res[i] = res[i + 1];
    --m;
    if (best > 0) {
      PairVal v = pair(ids[best - 1], ids[best]);
      prio[best - 1] = v.prio, res[best - 1] = v.id;
    }
    if (best + 1 < m) {
      PairVal v = pair(ids[best], ids[best + 1]);
      prio[best] = v.prio, res[best] = v.id;
    }
  }
  out.insert(out.end(), ids, ids + m);
}

// Heap of candidate merges keyed (priority, left position); stale entries are skipped by
// checking that both parts still carry the ids the entry was made from.
void BpeModel::merge_large(const uint8_t* p, size_t n, std::vector<uint32_t>& out) const {
  struct Cand {
    uint32_t prio, pos, left, right;
    bool operator>(const Cand& o) const { return prio != o.prio ? prio > o.prio : pos > o.pos; }
  };
  std::vector<uint32_t> id(n), next(n), prev(n);
  for (size_t i = 0; i < n; ++i) id[i] = byte_id_[p[i]], next[i] = uint32_t(i + 1), prev[i] = uint32_t(i - 1);
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap;
  auto push = [&](uint32_t l) {
    uint32_t r = next[l];
    if (r >= n) return;
    PairVal v = pair(id[l], id[r]);
    if (v.prio != kNoToken) heap.push({v.prio, l, id[l], id[r]});
  };
  for (uint32_t i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    Cand c = heap.top();
    heap.pop();
    uint32_t l = c.pos, r = next[l];
    if (id[l] != c.left || r >= n || id[r] != c.right) continue;  // stale
    id[l] = pair(c.left, c.right).id;
    id[r] = kNoToken;
    next[l] = next[r];
    if (next[l] < n) prev[next[l]] = l;
    if (l > 0) push(prev[l]);
    push(l);
  }
  for (uint32_t i = 0; i < n; i = next[i]) out.push_back(id[i]);
}

void BpeModel::encode_piece_reference(const uint8_t* p, size_t n,
                                      std::vector<uint32_t>& out) const {
  std::string_view s(reinterpret_cast<const char*>(p), n);
  if (whole_lookup_ && lookup(s) != kNoToken) {
    out.push_back(lookup(s));
    return;
  }
  // parts = byte ranges [bounds[i], bounds[i+1]); each range is a token.
  std::vector<size_t> bounds;
  for (size_t i = 0; i <= n; ++i) bounds.push_back(i);
  auto part_id = [&](size_t i) { return lookup(s.substr(bounds[i], bounds[i + 1] - bounds[i])); };
  for (;;) {
    uint32_t best_prio = kNoToken;
    size_t best = 0;
    for (size_t i = 0; i + 2 < bounds.size(); ++i) {
      uint32_t prio;
      if (ranks_mode_)  // tiktoken: rank of the concatenated bytes
        prio = lookup(s.substr(bounds[i], bounds[i + 2] - bounds[i]));
      else
        prio = pair(part_id(i), part_id(i + 1)).prio;
      if (prio < best_prio) best_prio = prio, best = i;
    }
    if (best_prio == kNoToken) break;
    bounds.erase(bounds.begin() + long(best) + 1);
  }
  for (size_t i = 0; i + 1 < bounds.size(); ++i) out.push_back(part_id(i));
}

}  // namespace olmo::tokenizer
