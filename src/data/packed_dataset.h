// Packed fixed-length instances with document boundaries, as OLMo-core's NumpyPackedFSLDataset
// (numpy_dataset.py; data/utils.py pack_documents_into_instances, InstancePacker) with dtype
// uint32, bos_token_id None, long_doc_strategy truncate, boundaries found by scanning for EOS
// (local files, use_array_if_local None), no label-mask files (spec 5.6):
//   * source files (in the given order; permute_sources() gives OLMo-core's
//     source_permutation_seed order) are grouped into consecutive groups of source_group_size;
//   * documents of each file: spans ending at an EOS (inclusive); tokens after a file's last EOS
//     are dropped; a document longer than seq_len keeps only its first seq_len tokens;
//   * per group, the documents (offsets of all files of the group) are sorted by length,
//     decreasing, and packed with Optimized Best-Fit Decreasing: each goes into the open bin
//     with the smallest remaining space >= its length (first-opened first among equal spaces),
//     else a new bin; bins are instances, documents in insertion order;
//   * global instance index = running offset over the groups; each instance is right-padded
//     with pad_id to seq_len (label_length() = its real tokens; labels there are ignored);
//   * document_lengths(i) = OLMo-core get_document_lengths of the padded instance.
// Tie order: OLMo-core sorts with numpy's unstable np.argsort(-lengths), whose order among
// equal lengths depends on numpy's SIMD sort for the machine (AVX-512 argsort differs from the
// generic introsort). Here equal lengths keep document order (stable sort): instances equal
// OLMo-core's whenever a group's document lengths are distinct, and otherwise have the same
// packing (lengths per instance, padding, document lengths), equal-length documents possibly
// exchanged. seq_len must be a power of two (OLMo-core's segment tree requires it).
// Errors: an EOS id < 0 or >= vocab ("packed instances need an EOS id"), a file not found /
// not a multiple of 4 bytes, a token id >= vocab (names file and offset), no documents.
// Cost: one pass over every token at open (EOS scan + id check) and O(docs log docs) packing;
// memory 24 bytes per document. read() copies the instance's documents out of the memory maps.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/file_io.h"
#include "data/instance_source.h"

namespace olmo::data {

struct PackedOptions {
  int64_t eos_id = -1;  // required (documents are split on it)
  uint32_t pad_id = 100277;
  int64_t source_group_size = 1;
  bool validate = true;  // check every token id < vocab at open
};

class PackedFslDataset : public InstanceSource {
 public:
  PackedFslDataset(std::vector<std::string> paths, int64_t seq_len, uint32_t vocab_size,
                   PackedOptions opt);

  int64_t size() const override { return int64_t(inst_group_.size()); }
  int64_t seq_len() const override { return seq_len_; }
  void read(int64_t index, int32_t* out) const override;
  void hash_into(Hasher& h, int64_t index) const override;
  int64_t label_length(int64_t index) const override;
  std::vector<int32_t> document_lengths(int64_t index) const override;
  std::string fingerprint() const override;
  const char* fingerprint_version() const override { return kFingerprintVersion; }
  static constexpr const char* kFingerprintVersion = "v2.0";

  const std::vector<std::string>& paths() const override { return paths_; }
  uint32_t vocab_size() const override { return vocab_; }
  // "K documents: FILE [a, b), ..." (the first 4 named).
  std::string describe(int64_t index) const override;
  // Token file f as a memory-mapped array of file_tokens(f) ids.
  const uint32_t* file_data(int f) const {
    return reinterpret_cast<const uint32_t*>(maps_[size_t(f)].data());
  }
  int64_t file_tokens(int f) const { return int64_t(sizes_[size_t(f)] / 4); }
  int64_t num_documents() const { return int64_t(docs_.size()); }
  // Real (non-padding) tokens over all instances.
  int64_t num_tokens() const { return total_tokens_; }
  // The documents of instance `index` in order: (file index, start token, end token).
  struct Doc {
    int32_t file;
    int64_t start, end;
  };
  std::vector<Doc> instance_documents(int64_t index) const;

 private:
  void check_index(int64_t index) const;
  std::vector<std::string> paths_;
  std::vector<MappedFile> maps_;
  std::vector<uint64_t> sizes_;
  int64_t seq_len_;
  uint32_t vocab_;
  PackedOptions opt_;
  std::vector<Doc> docs_;             // all documents, instance by instance
  std::vector<int64_t> inst_begin_;   // instance i = docs_[inst_begin_[i], inst_begin_[i+1])
  std::vector<int32_t> inst_group_;   // source group of each instance
  std::vector<int64_t> inst_tokens_;  // real tokens of each instance
  int64_t total_tokens_ = 0;
};

// OLMo-core's source_permutation_seed: paths reordered by Python random.Random(seed).shuffle.
std::vector<std::string> permute_sources(const std::vector<std::string>& paths, uint64_t seed);

}  // namespace olmo::data
