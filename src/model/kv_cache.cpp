// KV cache and the decoder's request checks (see kv_cache.h). The forward itself is
// Olmo3::forward_cached (olmo3.cpp): the training forward's blocks with this cache as parameter.
#include "model/kv_cache.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace olmo::model {

KvCache::KvCache(const ModelConfig& c, int64_t batch, int64_t max_len)
    : batch_(batch), max_len_(max_len), kv_dim_(c.kv_dim()) {
  OLMO_CHECK(batch > 0, "KvCache: batch must be positive, got ", batch);
  OLMO_CHECK(max_len > 0 && max_len <= c.max_seq_len, "KvCache: length ", max_len,
             " must be in 1..", c.max_seq_len, " (the context of model '", c.name, "')");
  len_.assign(size_t(batch), 0);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    int64_t w = c.layer_window[size_t(l)];
    int64_t s = w > 0 ? std::min(w, max_len) : max_len;
    slots_.push_back(s);
    k_.emplace_back(size_t(batch * s * kv_dim_));
    v_.emplace_back(size_t(batch * s * kv_dim_));
  }
}

size_t KvCache::bytes_for(const ModelConfig& c, int64_t batch, int64_t max_len) {
  size_t slots = 0;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const int64_t w = c.layer_window[size_t(l)];
    slots += size_t(w > 0 ? std::min(w, max_len) : max_len);
  }
  return 2 * size_t(batch) * slots * size_t(c.kv_dim()) * sizeof(float);
}

size_t KvCache::bytes() const {
  size_t n = 0;
  for (auto& b : k_) n += b.size();
  for (auto& b : v_) n += b.size();
  return n * sizeof(float);
}

void KvCache::store(int64_t layer, int64_t b, int64_t pos, int64_t n, const float* k,
                    const float* v) {
  const int64_t S = slots(layer);
  float *kc = this->k(layer, b), *vc = this->v(layer, b);
  for (int64_t p = std::max(pos, pos + n - S); p < pos + n; ++p) {
    std::memcpy(kc + (p % S) * kv_dim_, k + (p - pos) * kv_dim_, size_t(kv_dim_) * sizeof(float));
    std::memcpy(vc + (p % S) * kv_dim_, v + (p - pos) * kv_dim_, size_t(kv_dim_) * sizeof(float));
  }
}

Decoder::Decoder(Olmo3& m, int64_t batch, int64_t max_len)
    : m_(m), cache_(m.config(), batch, max_len) {}

void Decoder::prefill(int64_t b, const int32_t* tokens, int64_t n, float* logits) {
  const ModelConfig& c = m_.config();
  OLMO_CHECK(b >= 0 && b < cache_.batch(), "Decoder::prefill: sequence ", b, " outside 0..",
             cache_.batch() - 1);
  OLMO_CHECK(cache_.length(b) == 0, "Decoder::prefill: sequence ", b, " already holds ",
             cache_.length(b), " tokens");
  OLMO_CHECK(n >= 1, "Decoder::prefill: empty prompt");
  OLMO_CHECK(n <= cache_.max_len(), "prompt of ", n, " tokens is longer than the context of ",
             cache_.max_len(), " tokens (model '", c.name, "', max_seq_len ", c.max_seq_len, ")");
  m_.forward_cached(tokens, 1, n, cache_, &b, logits);
}

void Decoder::step(const int64_t* seq, const int32_t* tokens, int64_t rows, float* logits) {
  const ModelConfig& c = m_.config();
  OLMO_CHECK(rows >= 1 && rows <= cache_.batch(), "Decoder::step: ", rows,
             " rows for a cache of ", cache_.batch(), " sequences");
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t b = seq[i];
    OLMO_CHECK(b >= 0 && b < cache_.batch(), "Decoder::step: sequence ", b, " outside 0..",
               cache_.batch() - 1);
    for (int64_t j = 0; j < i; ++j)
      OLMO_CHECK(seq[j] != b, "Decoder::step: sequence ", b, " given twice");
    OLMO_CHECK(cache_.length(b) > 0, "Decoder::step: sequence ", b, " is empty (prefill first)");
    OLMO_CHECK(cache_.length(b) < cache_.max_len(), "sequence ", b, " reached the context of ",
               cache_.max_len(), " tokens (model '", c.name, "')");
  }
  m_.forward_cached(tokens, rows, 1, cache_, seq, logits);
}

}  // namespace olmo::model
