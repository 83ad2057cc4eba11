// NumpyPaddedFSLDataset equivalent (see eval_dataset.h).
#include "data/eval_dataset.h"

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "core/sha256.h"

namespace olmo::data {

EvalDataset::EvalDataset(std::vector<std::string> paths, int64_t seq_len, uint32_t vocab_size,
                         FslOptions opt)
    : paths_(std::move(paths)), seq_len_(seq_len), vocab_(vocab_size), opt_(opt) {
  OLMO_CHECK(!paths_.empty(), "eval dataset: at least one token file is required");
  OLMO_CHECK(seq_len_ > 0, "eval dataset: sequence length must be positive, got ", seq_len_);
  for (size_t f = 0; f < paths_.size(); ++f) {
    const std::string& p = paths_[f];
    OLMO_CHECK(file_exists(p), p, ": token file not found");
    MappedFile m(p);
    OLMO_CHECK(m.size() % 4 == 0, p, ": size ", m.size(),
               " bytes is not a multiple of 4 (expected headerless little-endian uint32 tokens)");
    const int64_t n = static_cast<int64_t>(m.size() / 4);
    const uint32_t* tok = reinterpret_cast<const uint32_t*>(m.data());
    if (opt_.validate) check_token_ids(tok, n, vocab_, p);
    size_t before = docs_.size();
    int64_t start = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (tok[i] != opt_.eos_id) continue;
      int64_t len = i + 1 - start;
      if (len > seq_len_) ++truncated_;
      docs_.push_back({static_cast<int32_t>(f), start, start + std::min(len, seq_len_)});
      start = i + 1;
    }
    OLMO_CHECK(docs_.size() > before, p, ": no document (no EOS token ", opt_.eos_id,
               ") in the token file");
    sizes_.push_back(m.size());
    maps_.push_back(std::move(m));
  }
}

int64_t EvalDataset::length(int64_t index) const {
  OLMO_CHECK(index >= 0 && index < size(), "eval dataset: instance ", index, " out of range [0, ",
             size(), ")");
  return docs_[index].end - docs_[index].start;
}

void EvalDataset::read(int64_t index, int32_t* ids, int32_t* targets, uint8_t* mask) const {
  const int64_t L = length(index);
  const Doc& d = docs_[index];
  const uint32_t* src = reinterpret_cast<const uint32_t*>(maps_[d.file].data()) + d.start;
  if (!opt_.validate) check_token_ids(src, L, vocab_, paths_[d.file], d.start);
  for (int64_t t = 0; t < seq_len_; ++t) ids[t] = t < L ? static_cast<int32_t>(src[t])
                                                       : static_cast<int32_t>(opt_.pad_id);
  if (targets) {
    for (int64_t t = 0; t < seq_len_; ++t) targets[t] = t + 1 < L ? ids[t + 1] : kIgnoreIndex;
  }
  if (mask) {
    for (int64_t t = 0; t < seq_len_; ++t) mask[t] = t < L ? 1 : 0;
  }
}

void EvalDataset::read_batch(int64_t first, int64_t count, int32_t* ids, int32_t* targets) const {
  for (int64_t i = 0; i < count; ++i)
    read(first + i, ids + i * seq_len_, targets ? targets + i * seq_len_ : nullptr, nullptr);
}

std::string EvalDataset::fingerprint() const {
  Sha256 h;
  auto put = [&](const std::string& s) { h.update(s.data(), s.size()); };
  put("class=NumpyPaddedFSLDataset");
  put(cat("vocab_size=", vocab_, ","));
  put(cat("pad_token_id=", opt_.pad_id, ","));
  put(cat("eos_token_id=", opt_.eos_id, ","));
  put("dtype=<class 'numpy.uint32'>,");
  put("max_target_sequence_length=None,");
  put("bos_token_id=None,");
  put(cat("sequence_length=", seq_len_, ","));
  for (size_t i = 0; i < paths_.size(); ++i)
    put(cat("path=", std::filesystem::path(paths_[i]).filename().string(), ",size=", sizes_[i],
            ","));
  return h.hex_digest();
}

}  // namespace olmo::data
