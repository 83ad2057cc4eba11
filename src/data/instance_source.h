// The interface the data loader reads instances through, implemented by FslDataset (stages 1-2,
// OLMo-core NumpyFSLDataset) and PackedFslDataset (stage 3, NumpyPackedFSLDataset). Every
// instance has exactly seq_len() tokens. Contracts:
//   read(i, out)            out[seq_len] = the instance's token ids (one copy; ids < vocab)
//   hash_into(h, i)         feeds the instance's tokens as little-endian uint32 (seq_len * 4
//                           bytes) to h: the loader's global batch content hash
//   label_length(i)         positions [0, n) carry labels (OLMo-core label_mask True); the rest
//                           is padding (label_mask False); seq_len() when there is no padding
//   document_lengths(i)     OLMo-core get_document_lengths of the instance (EOS inclusive, the
//                           padding a final segment); sums to seq_len()
//   fingerprint()           OLMo-core's dataset fingerprint (version fingerprint_version())
//   paths(), vocab_size()   the token files in dataset order, the vocabulary size
//   describe(i)             where instance i's tokens come from, for error messages and audit
//                           findings: "FILE tokens [a, b)" (fsl) or its packed documents
// dataset_type() is the loader state's dataset_type ("fsl" for both: OLMo-core's
// NumpyFSLDataLoader serves every NumpyFSLDatasetBase).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/hash.h"

namespace olmo::data {

class InstanceSource {
 public:
  virtual ~InstanceSource() = default;
  virtual int64_t size() const = 0;     // number of instances
  virtual int64_t seq_len() const = 0;  // tokens per instance
  virtual void read(int64_t index, int32_t* out) const = 0;
  virtual void hash_into(Hasher& h, int64_t index) const = 0;
  virtual int64_t label_length(int64_t index) const { return (void)index, seq_len(); }
  virtual std::vector<int32_t> document_lengths(int64_t index) const = 0;
  virtual std::string fingerprint() const = 0;
  virtual const char* fingerprint_version() const = 0;
  virtual const char* dataset_type() const { return "fsl"; }
  virtual const std::vector<std::string>& paths() const = 0;
  virtual uint32_t vocab_size() const = 0;
  virtual std::string describe(int64_t index) const = 0;
};

// Training inputs for a batch of instances read from `ds` (tokens [B, T], row b = instance
// indices[b]): targets [B, T] as OLMo-core get_labels (tokens shifted left; kIgnoreIndex at the
// last position and wherever the next position is padding) and, when doc_ids is non-null,
// doc_ids [B, T] = document ordinals from document_lengths (intra-document attention masking).
void batch_targets(const InstanceSource& ds, const std::vector<int64_t>& indices,
                   const int32_t* tokens, int64_t B, int64_t T, int32_t* targets,
                   int32_t* doc_ids = nullptr);

// The dataset a training config asks for (data.dataset, data.eos_id, data.pad_id,
// data.source_group_size, data.source_permutation_seed):
//   kind "fsl"        FslDataset (stages 1-2)
//   kind "packed_fsl" PackedFslDataset (stage 3); needs eos_id >= 0
// permutation_seed != 0 reorders the files first as OLMo-core's source_permutation_seed
// (Python random.Random(seed).shuffle; 0 = mix order, our config's "unset"). Errors name the
// problem; an unknown kind throws.
struct DatasetSpec {
  std::string kind = "fsl";
  std::vector<std::string> paths;
  int64_t seq_len = 0;
  uint32_t vocab_size = 0;
  int64_t eos_id = -1, pad_id = -1;
  int64_t source_group_size = 1;
  uint64_t permutation_seed = 0;
  bool validate = true;
};
std::unique_ptr<InstanceSource> open_instance_source(const DatasetSpec& spec);

}  // namespace olmo::data
