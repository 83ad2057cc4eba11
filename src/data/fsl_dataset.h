// Fixed-sequence-length instances over OLMo-format token files (an InstanceSource, see
// instance_source.h), as OLMo-core's NumpyFSLDataset (numpy_dataset.py) with dtype uint32 and
// max_target_sequence_length None:
//   * each file (headerless little-endian uint32) is chunked on its own into
//     floor(tokens / seq_len) windows; the trailing remainder of each file is dropped;
//   * global instance index = running offset over the files in list order;
//   * instance k of file f = tokens [k*seq_len, (k+1)*seq_len) of f, read from a memory map.
// Files are validated at open: size a multiple of 4 (error names the file), every token id
// < vocab size (error names the file and token offset; skip with validate = false, read()
// still checks what it copies), and at least one instance overall.
// fingerprint() is OLMo-core's dataset fingerprint, version "v2.0", bit for bit: sha256 over
// "class=NumpyFSLDataset", the fields vocab_size, pad_token_id, eos_token_id, dtype,
// max_target_sequence_length, bos_token_id, then "path=<basename>,size=<bytes>," per file.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/file_io.h"
#include "core/token_ids.h"
#include "data/instance_source.h"

namespace olmo::data {


struct FslOptions {
  uint32_t eos_id = kDolma2Eos;
  uint32_t pad_id = kDolma2Pad;
  bool validate = true;  // scan every token at open (O(total tokens), memory bandwidth bound)
};

class FslDataset : public InstanceSource {
 public:
  FslDataset(std::vector<std::string> paths, int64_t seq_len, uint32_t vocab_size = kDolma2VocabSize,
             FslOptions opt = {});

  int64_t size() const override { return offsets_.back(); }  // number of instances
  int64_t seq_len() const override { return seq_len_; }
  int64_t num_tokens() const { return size() * seq_len_; }
  uint32_t vocab_size() const override { return vocab_; }
  uint32_t eos_id() const { return opt_.eos_id; }
  uint32_t pad_id() const { return opt_.pad_id; }
  const std::vector<std::string>& paths() const override { return paths_; }
  std::string describe(int64_t index) const override;  // "FILE tokens [a, b)"
  const std::vector<uint64_t>& file_sizes() const { return sizes_; }  // bytes
  // Instance offsets: file f holds global instances [offsets()[f], offsets()[f+1]).
  const std::vector<int64_t>& offsets() const { return offsets_; }

  // (file index, instance index within that file); throws on out-of-range.
  std::pair<int, int64_t> locate(int64_t index) const;
  // Zero-copy view of instance `index`: seq_len() tokens inside the memory map.
  const uint32_t* view(int64_t index) const;
  // Copy instance `index` into out[seq_len] (the one copy per token), checking ids < vocab.
  void read(int64_t index, int32_t* out) const override;
  void hash_into(Hasher& h, int64_t index) const override {
    h.update(view(index), static_cast<size_t>(seq_len_) * 4);
  }
  // OLMo-core get_document_lengths of instance `index` (EOS inclusive).
  std::vector<int32_t> document_lengths(int64_t index) const override;

  std::string fingerprint() const override;
  const char* fingerprint_version() const override { return kFingerprintVersion; }
  static constexpr const char* kFingerprintVersion = "v2.0";

 private:
  std::vector<std::string> paths_;
  std::vector<MappedFile> maps_;
  std::vector<uint64_t> sizes_;
  std::vector<int64_t> offsets_;  // size paths_+1
  int64_t seq_len_;
  uint32_t vocab_;
  FslOptions opt_;
};

// Scan a token array for ids >= vocab; throws naming `path` and the first bad offset.
void check_token_ids(const uint32_t* tok, int64_t n, uint32_t vocab, const std::string& path,
                     int64_t base_offset = 0);

// Training targets for instances [B, T]: tokens shifted left within each instance, last
// position kIgnoreIndex (OLMo-core get_labels without masks).
std::vector<int32_t> make_targets(const int32_t* tokens, int64_t B, int64_t T);

}  // namespace olmo::data
