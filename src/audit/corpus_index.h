// What `olmo prepare` wrote for the audit (corpus/prepare.h: token_counts.bin, docs.bin,
// ngrams13.bin), gathered for the token files of a training mix, and the checks that use it:
//   * the corpus's unigram distribution (the reference for the served-token check);
//   * train / held-out contamination: a held-out document whose tokens equal a training
//     document, or whose sampled 13-gram hashes occur in the training mix at a share
//     >= threshold (long shared passages), reported per document;
//   * the same document (equal token hash) under two mix entries.
// The 13-gram set is per prepared directory (a mix that uses some parts of a directory is checked
// against all of its parts); counts and documents are per part file.
// Entries whose directory has no index (token files not made by `olmo prepare`) are listed in
// `missing`; the caller decides (the in-loop audit counts small files itself).
// Cost: loading reads the index files only (8 bytes per sampled 13-gram, 16 per document);
// the held-out check reads the held-out token files once.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "audit/checks.h"
#include "audit/token_stats.h"

namespace olmo::audit {

struct CorpusIndex {
  std::vector<std::string> entries;   // token file paths, mix order
  std::vector<std::string> missing;   // entries without an index
  TokenHistogram counts;              // unigram counts over the indexed entries
  std::vector<uint64_t> ngrams;       // sorted unique sampled 13-gram hashes of the mix
  uint32_t ngram_sample = 0;          // 0: no n-gram index
  struct Doc {
    uint64_t hash;
    uint32_t entry, tokens;
  };
  std::vector<Doc> docs;              // sorted by hash
};

// with_ngrams false: skip the 13-gram files (ngram_sample stays 0: contamination by n-gram off).
CorpusIndex load_corpus_index(const std::vector<std::string>& token_files, uint32_t vocab,
                              bool with_ngrams = true);
// Bytes of the 13-gram index files next to the token files (each directory once).
uint64_t ngram_index_bytes(const std::vector<std::string>& token_files);

// Adds every token of a token file (headerless uint32) to h (the fallback for unindexed files).
void count_file_tokens(const std::string& path, TokenHistogram& h);

struct HeldoutDoc {
  int64_t index = 0, tokens = 0;
  std::string file;
  int64_t offset = 0;  // token offset in file
  int64_t grams = 0, grams_in_train = 0;
  bool exact = false;
  std::string train_entry;  // for exact matches
};
// Documents of the held-out token files (split at eos) found in the training mix. Throws naming
// the set if a path does not exist.
std::vector<HeldoutDoc> contaminated_docs(const CorpusIndex& idx,
                                          const std::vector<std::string>& heldout_files,
                                          uint32_t eos, double threshold);
// Findings (kind "contamination") for a held-out set, one per contaminated document (at most
// max_listed listed, the rest counted in a summary finding).
std::vector<Finding> check_contamination(const CorpusIndex& idx, const std::string& label,
                                         const std::vector<std::string>& heldout_files,
                                         uint32_t eos, double threshold, size_t max_listed = 20);
// Findings (kind "duplicate_across_entries"): a document under two different mix entries.
std::vector<Finding> check_cross_entry_duplicates(const CorpusIndex& idx, size_t max_listed = 20);

}  // namespace olmo::audit
