// NumpyFSLDataset equivalent over memory-mapped uint32 token files (see fsl_dataset.h).
#include "data/fsl_dataset.h"

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "data/doc_lengths.h"
#include "core/sha256.h"

namespace olmo::data {

void check_token_ids(const uint32_t* tok, int64_t n, uint32_t vocab, const std::string& path,
                     int64_t base_offset) {
  uint32_t mx = 0;
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, tok[i]);  // vectorises
  if (mx < vocab) return;
  for (int64_t i = 0; i < n; ++i)
    OLMO_CHECK(tok[i] < vocab, path, ": token id ", tok[i], " at token offset ", base_offset + i,
               " (byte offset ", 4 * (base_offset + i), ") is >= vocab size ", vocab);
}

FslDataset::FslDataset(std::vector<std::string> paths, int64_t seq_len, uint32_t vocab_size,
                       FslOptions opt)
    : paths_(std::move(paths)), seq_len_(seq_len), vocab_(vocab_size), opt_(opt) {
  OLMO_CHECK(!paths_.empty(), "FSL dataset: at least one token file is required");
  OLMO_CHECK(seq_len_ > 0, "FSL dataset: sequence length must be positive, got ", seq_len_);
  OLMO_CHECK(vocab_ > 0, "FSL dataset: vocab size must be positive");
  offsets_.push_back(0);
  for (const std::string& p : paths_) {
    OLMO_CHECK(file_exists(p), p, ": token file not found");
    MappedFile m(p);
    OLMO_CHECK(m.size() % 4 == 0, p, ": size ", m.size(),
               " bytes is not a multiple of 4 (expected headerless little-endian uint32 tokens)");
    const int64_t ntok = static_cast<int64_t>(m.size() / 4);
    if (opt_.validate)
      check_token_ids(reinterpret_cast<const uint32_t*>(m.data()), ntok, vocab_, p);
    sizes_.push_back(m.size());
    offsets_.push_back(offsets_.back() + ntok / seq_len_);
    maps_.push_back(std::move(m));
  }
  OLMO_CHECK(size() > 0, "FSL dataset is empty: ", paths_.size(), " token file(s) (first: ",
             paths_[0], ") hold no complete instance of ", seq_len_, " tokens");
}

std::pair<int, int64_t> FslDataset::locate(int64_t index) const {
  OLMO_CHECK(index >= 0 && index < size(), "FSL dataset: instance ", index,
             " out of range [0, ", size(), ")");
  // First file whose end offset is > index.
  auto it = std::upper_bound(offsets_.begin() + 1, offsets_.end(), index);
  int f = static_cast<int>(it - offsets_.begin()) - 1;
  return {f, index - offsets_[f]};
}

const uint32_t* FslDataset::view(int64_t index) const {
  auto [f, k] = locate(index);
  return reinterpret_cast<const uint32_t*>(maps_[f].data()) + k * seq_len_;
}

void FslDataset::read(int64_t index, int32_t* out) const {
  auto [f, k] = locate(index);
  const uint32_t* src = reinterpret_cast<const uint32_t*>(maps_[f].data()) + k * seq_len_;
  uint32_t mx = 0;
  for (int64_t i = 0; i < seq_len_; ++i) {
    out[i] = static_cast<int32_t>(src[i]);
    mx = std::max(mx, src[i]);
  }
  if (mx >= vocab_) check_token_ids(src, seq_len_, vocab_, paths_[f], k * seq_len_);
}

std::string FslDataset::describe(int64_t index) const {
  auto [f, k] = locate(index);
  return cat(paths_[size_t(f)], " tokens [", k * seq_len_, ", ", (k + 1) * seq_len_, ")");
}

std::vector<int32_t> FslDataset::document_lengths(int64_t index) const {
  return data::document_lengths(view(index), seq_len_, opt_.eos_id);
}

std::string FslDataset::fingerprint() const {
  // Exactly OLMo-core NumpyDatasetBase.fingerprint for NumpyFSLDataset(dtype=np.uint32,
  // max_target_sequence_length=None, bos_token_id=None).
  Sha256 h;
  auto put = [&](const std::string& s) { h.update(s.data(), s.size()); };
  put("class=NumpyFSLDataset");
  put(cat("vocab_size=", vocab_, ","));
  put(cat("pad_token_id=", opt_.pad_id, ","));
  put(cat("eos_token_id=", opt_.eos_id, ","));
  put("dtype=<class 'numpy.uint32'>,");
  put("max_target_sequence_length=None,");
  put("bos_token_id=None,");
  for (size_t i = 0; i < paths_.size(); ++i)
    put(cat("path=", std::filesystem::path(paths_[i]).filename().string(), ",size=", sizes_[i],
            ","));
  return h.hex_digest();
}

std::vector<int32_t> make_targets(const int32_t* tokens, int64_t B, int64_t T) {
  std::vector<int32_t> y(static_cast<size_t>(B * T));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t + 1 < T; ++t) y[b * T + t] = tokens[b * T + t + 1];
    if (T > 0) y[b * T + T - 1] = kIgnoreIndex;
  }
  return y;
}

}  // namespace olmo::data
