// Evaluation (perplexity) instances as OLMo-core's NumpyPaddedFSLDataset: one document per
// instance. Documents are found from EOS in each token file (EOS inclusive; tokens after the
// last EOS of a file form no document), exactly as segment_documents_into_instances: a document
// longer than seq_len is TRUNCATED to its first seq_len tokens (not split). Each instance is
// right-padded to seq_len with pad_id; label_mask is 1 on document tokens, 0 on padding; the
// targets are OLMo-core's get_labels: input_ids with masked positions set to -100, shifted left
// by one, last position -100. Instance index = running offset over files in list order.
// Files are validated as in FslDataset; a file without any document is an error (as OLMo-core).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/file_io.h"
#include "data/fsl_dataset.h"

namespace olmo::data {

class EvalDataset {
 public:
  EvalDataset(std::vector<std::string> paths, int64_t seq_len, uint32_t vocab_size = kDolma2VocabSize,
              FslOptions opt = {});

  int64_t size() const { return static_cast<int64_t>(docs_.size()); }
  int64_t seq_len() const { return seq_len_; }
  int64_t length(int64_t index) const;  // unpadded tokens of instance index (<= seq_len)
  int64_t num_truncated() const { return truncated_; }
  // input_ids[T], targets[T] (may be null), label_mask[T] (may be null).
  void read(int64_t index, int32_t* input_ids, int32_t* targets, uint8_t* label_mask) const;
  // Instances [first, first+count) as [count, T] arrays (the eval loader's batch).
  void read_batch(int64_t first, int64_t count, int32_t* input_ids, int32_t* targets) const;
  // OLMo-core fingerprint of NumpyPaddedFSLDataset (fields add sequence_length).
  std::string fingerprint() const;

 private:
  struct Doc {
    int32_t file;
    int64_t start, end;  // token range in the file, end - start <= seq_len
  };
  std::vector<std::string> paths_;
  std::vector<MappedFile> maps_;
  std::vector<uint64_t> sizes_;
  std::vector<Doc> docs_;
  int64_t seq_len_;
  uint32_t vocab_;
  FslOptions opt_;
  int64_t truncated_ = 0;
};

}  // namespace olmo::data
