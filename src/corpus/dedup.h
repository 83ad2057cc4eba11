// Deduplication of a corpus (used by `olmo corpus build`): exact duplicates, near-duplicates and
// held-out overlap, removed from training; held-out documents are never removed.
//
// Documents come in one priority order: held-out sets first, then training (corpus build passes
// training sorted by id). A training document is removed by the first rule that fires:
//   exact    its normalised text (ASCII lower-cased, whitespace runs -> one space, trimmed) equals
//            that of a held-out document or of an earlier kept training document (XXH3-64 of the
//            normalised text, confirmed by comparing the normalised strings).
//   near     the estimated Jaccard similarity of its set of token 13-grams (documents under 13
//            tokens: one shingle, the whole document) with a held-out document or an earlier kept
//            training document is >= jaccard (default 0.8). Estimate: MinHash with K = bands x
//            rows 32-bit values (h_i(g) = high 32 bits of a_i*g + b_i mod 2^64, a_i odd, g the
//            13-gram's XXH3), J ~ share of equal values (std ~ sqrt(J(1-J)/K): 0.04 at J 0.8,
//            K 100). Candidates: LSH, a pair is compared iff all `rows` values of one of `bands`
//            bands agree: P(candidate | J) = 1 - (1 - J^rows)^bands. With 20 x 5 that is 0.9996
//            at J 0.8, 0.975 at 0.7, 0.47 at 0.5 and 0.05 at 0.3 (the false candidates only cost
//            one signature comparison each). In a bucket a document is compared with at most the
//            first 64 earlier members.
//   heldout  the data-loader audit's contamination rule (src/audit/corpus_index.h): a held-out
//            document with >= 3 sampled 13-gram windows (XXH3 13-gram hash % sample == 0, the
//            hash `olmo prepare` indexes) of which a share >= containment (0.5, the audit's
//            ngram_threshold) occur in kept training documents. Then the training document
//            holding most of its windows goes, then the next, until the share is < containment;
//            so the audit of the written corpus finds none.
// Cost per million documents of n tokens: tokenization (the tokenizer's speed), then K
// multiply-adds per 13-gram; memory 4K bytes of signatures per document (400 MB per million at
// K 100) + 16 bytes per document per band in flight + the sampled 13-grams of the held-out sets;
// the LSH sort is O(bands n log n). Measured (bench/dedup_bench.cpp, bench/results/dedup.md) on
// 1M documents of ~100 words: 11 CPU-s and ~450 MB above the text with word tokens, 59 CPU-s with
// the cl100k tokenizer (tokenization dominates).
// dedup_reference() is the slow, readable definition (exact Jaccard of full 13-gram sets over all
// pairs, std::set containment) that the tests hold the fast path to.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace olmo::corpus {

using TokenizeFn = std::function<void(std::string_view, std::vector<uint32_t>&)>;

struct DedupOptions {
  bool enabled = true;
  double jaccard = 0.8;       // near-duplicate threshold (estimated Jaccard of 13-gram sets)
  int bands = 20, rows = 5;   // LSH; K = bands * rows MinHash values
  double containment = 0.5;   // held-out share threshold (audit.ngram_threshold)
  uint32_t sample = 8;        // 13-gram sample of the held-out rule (prepare's ngram_sample)
  int threads = 0;            // 0: all hardware threads
  uint64_t seed = 0x6465647570ull;
  // Token ids of a text, thread-safe (the corpus tokenizer). Empty: words (split at ASCII
  // whitespace, each word's XXH3 low 32 bits) -- a tokenizer-free stand-in.
  TokenizeFn tokenize;
};

struct DedupDoc {
  std::string_view text;
  bool heldout = false;  // never removed; all held-out documents must precede training ones
};

struct Removal {
  size_t doc = 0;           // index into the input
  std::string rule;         // "exact", "near", "heldout"
  size_t duplicate_of = 0;  // the document it duplicates (for "heldout": the held-out document)
  double jaccard = 0;       // near: estimated (fast) / exact (reference) Jaccard; exact: 1
  double share = 0;         // heldout: share of the held-out document's sampled 13-grams in the
                            // training document removed (before its removal)
};

struct DedupResult {
  std::vector<uint8_t> removed;   // per input document
  std::vector<Removal> removals;  // in input order of the removed document
  uint64_t exact = 0, near = 0, heldout = 0;
  double seconds_sign = 0;   // tokenize + 13-gram hashes + MinHash (parallel)
  double seconds_match = 0;  // exact groups, LSH buckets, greedy removal, held-out rule
};

// The fast path (OpenMP over documents; results independent of the thread count).
DedupResult dedup(const std::vector<DedupDoc>& docs, const DedupOptions& opt);
// The slow reference: O(n^2) pairs, exact Jaccard. Same rules and order; for tests.
DedupResult dedup_reference(const std::vector<DedupDoc>& docs, const DedupOptions& opt);

// Helpers shared by both paths (and the tests).
std::string normalize_text(std::string_view text);
void word_tokens(std::string_view text, std::vector<uint32_t>& out);
// Detection probability of a pair with Jaccard j: 1 - (1 - j^rows)^bands.
double lsh_detection_probability(double j, int bands, int rows);

}  // namespace olmo::corpus
