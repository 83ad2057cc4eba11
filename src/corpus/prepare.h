// `olmo prepare`: documents (JSONL .jsonl/.jsonl.gz/.jsonl.zst, or plain text files, one
// document per file; directories are walked in sorted order) -> OLMo token files
// OUT/part-NNNNN.npy (headerless LE uint32) + OUT/part-NNNNN.csv.gz (start,end,id), with one EOS
// after each document, plus OUT/prepare.json (inputs, counts, files; no timings).
// Determinism: documents are read in input order in batches, tokenized in parallel, and written in
// input order, so every output byte is independent of the thread count. Files roll over before a
// document that would take the current file past max_tokens_per_file (a longer document gets a
// file of its own; documents are never split). Empty documents are skipped and counted; invalid
// UTF-8 is replaced by U+FFFD (counted). No documents at all is an error. Output files appear
// only complete (temp name + rename); stale part files from an earlier, larger run are removed.
// Cost: tokenizer-bound, ~threads x single-core speed; memory ~ batch_bytes x 6.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "corpus/dedup.h"
#include "tokenizer/tokenizer.h"

namespace olmo::corpus {

// What prepare needs of a tokenizer. encode_append must be thread-safe.
struct Encoder {
  std::function<void(std::string_view, std::vector<uint32_t>&)> encode_append;
  uint32_t eos_id = 0;
  uint32_t vocab_size = 0;
  std::string name;  // recorded in prepare.json (e.g. the tokenizer path)
};

inline Encoder encoder_of(const tokenizer::Tokenizer& tok) {
  return {[&tok](std::string_view t, std::vector<uint32_t>& out) { tok.encode_append(t, out); },
          tok.eos_id(), tok.vocab_size(), tok.path()};
}

struct PrepareOptions {
  std::string out_dir;
  int threads = 0;                          // 0: all hardware threads
  bool skip_bad_lines = false;              // malformed JSONL lines: skip and count
  uint64_t max_tokens_per_file = 1ull << 28;
  bool progress = false;                    // draw a bar on stderr (only if it is a terminal)
  size_t batch_bytes = 8u << 20;            // text per parallel batch
  bool audit_index = true;                  // write the audit index files (below)
  uint32_t ngram_sample = 8;                // keep 13-gram hashes with hash % ngram_sample == 0
  bool part_per_input = false;              // also start a new part file at each input file
                                            // (corpus shard k -> its own part file(s))
  // --dedup: before tokenizing, the inputs' documents (all held in memory) are deduplicated
  // (dedup.h, with this encoder's tokens) among themselves and against the held-out documents of
  // dedup_heldout (files or directories, never written); the removed ones are skipped, listed in
  // OUT/dedup_report.jsonl and counted in prepare.json "dedup". If none survives: an error, and
  // nothing is written. Cost: the inputs are read and tokenized twice.
  bool dedup = false;
  std::vector<std::string> dedup_heldout;
  DedupOptions dedup_options;
};

// Audit index written next to the token files (read by src/audit/corpus_index.h, so that the
// data-loader audit never re-reads the corpus). All little-endian:
//   token_counts.bin  "OLMOTCNT" u32 vocab, u32 parts; per part: u32 nnz, nnz x u32 id,
//                     nnz x u64 count (unigram counts of every token of that part, EOS included)
//   docs.bin          "OLMODOCS" u64 n; n x {u32 part, u32 tokens (EOS excluded), u64 hash}
//                     hash = doc_hash(tokens without the EOS)
//   ngrams13.bin      "OLMONG13" u32 n (13), u32 sample, u64 count; count x u64 sorted unique
//                     ngram_hash of every window of 13 tokens inside one document (EOS
//                     excluded) with ngram_hash % sample == 0 (a deterministic sample)
//   token_stats.json  tokens, unigram entropy (bits), top-32 tokens and their shares
// Cost: one XXH3 of 52 bytes per token and a sort of tokens / sample hashes.
constexpr int kNgram = 13;
uint64_t ngram_hash(const uint32_t* tokens);          // tokens[0..13)
uint64_t doc_hash(const uint32_t* tokens, size_t n);

struct PrepareStats {
  uint64_t docs = 0, tokens = 0, bad_lines = 0, empty_docs = 0, utf8_fixes = 0, text_bytes = 0;
  uint64_t dedup_removed = 0;
  std::vector<std::string> files;  // the .npy paths written
  double seconds = 0;
};

// Expands directories (sorted recursive walk, regular files only); checks every path exists.
std::vector<std::string> expand_inputs(const std::vector<std::string>& inputs);

PrepareStats prepare(const std::vector<std::string>& inputs, const Encoder& enc,
                     const PrepareOptions& opt);

// "part-00007.npy"
std::string part_name(size_t index);

}  // namespace olmo::corpus
