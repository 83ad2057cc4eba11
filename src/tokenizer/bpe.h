// Byte-level BPE model: token bytes <-> ids and the merge procedure for one pre-token.
// Two ways to define merge priority, matching the two file formats:
//  - ranks (OpenAI .tiktoken): the pair (a, b) may merge iff bytes(a)+bytes(b) is a token t, and
//    its priority is t's rank; the whole pre-token is first looked up as a single token.
//  - merges (HF tokenizer.json): the pair (a, b) may merge iff it is in the merges list, with
//    priority = its index there; whole-piece lookup only when the file sets ignore_merges.
// In both, the lowest-priority pair merges first, leftmost on ties (tiktoken / HF semantics).
// Cost: a hash lookup for pieces that are tokens; O(n^2) rescans for pieces up to 48 bytes,
// O(n log n) with a heap beyond. All methods const and thread-safe after construction.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace olmo::tokenizer {

inline constexpr uint32_t kNoToken = 0xFFFFFFFFu;

class BpeModel {
 public:
  // tokens[id] = the token's bytes; an empty string marks an id that is not a BPE token.
  // Throws olmo::Error (message prefixed by `where`) for duplicate tokens or missing bytes.
  static BpeModel from_ranks(std::vector<std::string> tokens, const std::string& where);
  // merges[i] = (left id, right id); bytes(left)+bytes(right) must be a token.
  static BpeModel from_merges(std::vector<std::string> tokens,
                              const std::vector<std::pair<uint32_t, uint32_t>>& merges,
                              bool ignore_merges, const std::string& where);

  // Appends the ids of one pre-token (n >= 1 bytes).
  void encode_piece(const uint8_t* p, size_t n, std::vector<uint32_t>& out) const;
  // Slow, readable reference of encode_piece (quadratic rescans, byte-string lookups); tests
  // hold the two together.
  void encode_piece_reference(const uint8_t* p, size_t n, std::vector<uint32_t>& out) const;

  uint32_t size() const { return uint32_t(offsets_.size() - 1); }  // ids 0..size()-1
  bool is_token(uint32_t id) const { return id < size() && offsets_[id + 1] > offsets_[id]; }
  std::string_view token_bytes(uint32_t id) const {
    return std::string_view(arena_.data() + offsets_[id], offsets_[id + 1] - offsets_[id]);
  }
  uint32_t lookup(std::string_view bytes) const;  // id or kNoToken
  size_t num_pairs() const { return pair_count_; }

 private:
  struct PairVal {
    uint32_t prio, id;
  };
  BpeModel() = default;
  void build_tokens(std::vector<std::string> tokens, const std::string& where);
  void add_pair(uint32_t a, uint32_t b, uint32_t prio, uint32_t id);
  void reserve_pairs(size_t n);
  PairVal pair(uint32_t a, uint32_t b) const;
  void merge_small(const uint8_t* p, size_t n, std::vector<uint32_t>& out) const;
  void merge_large(const uint8_t* p, size_t n, std::vector<uint32_t>& out) const;

  std::string arena_;                // all token bytes
  std::vector<uint32_t> offsets_;    // token id -> [offsets_[id], offsets_[id+1]) in arena_
  std::vector<uint32_t> piece_tab_;  // open addressing: slot -> id (kNoToken = empty)
  uint64_t piece_mask_ = 0;
  std::vector<uint64_t> pair_keys_;  // open addressing: (a << 32 | b), ~0 = empty
  std::vector<PairVal> pair_vals_;
  uint64_t pair_mask_ = 0;
  size_t pair_count_ = 0;
  uint32_t byte_id_[256] = {};
  bool ranks_mode_ = true;     // priority from ranks (reference uses byte lookups)
  bool whole_lookup_ = true;   // try the whole piece as one token first
};

}  // namespace olmo::tokenizer
