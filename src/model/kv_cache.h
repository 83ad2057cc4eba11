// Incremental OLMo 3 inference with a KV cache. There is no second forward here: the decoder
// block's code is Olmo3's (olmo3.h, Olmo3::forward_cached), and the cache is its parameter.
//
// KvCache: per layer and sequence, K and V (after QK-norm and RoPE) as [slots, KV, hd] fp32.
// Full-attention layers keep every position (slots = max_len); sliding layers keep only their
// window (slots = min(window, max_len)), as a ring: position p lives in slot p % slots. A query
// at position p of a layer with window w sees positions max(0, p-w+1)..p, which are exactly the
// ones still in the ring. Memory: sum over layers of 2 * batch * slots * KV * hd floats.
//
// Decoder: the cache plus the checks of a caller's requests. prefill(b, prompt) runs a whole
// prompt of sequence b at once (GEMMs over its tokens, the tiled attention kernel, as training
// does) and stores its K/V; step() then advances any set of sequences by one token each,
// sequences at different positions in one batch (prompts of different lengths need no padding;
// the attention is kernels/attention_decode.h against each sequence's ring). Both return the
// last token's logits [V] per sequence. The model's precision applies (bf16_mixed: bf16 GEMMs,
// as its training forward).
// Cost per step: the weight GEMMs (2 * params flops per token, bandwidth-bound at batch 1) plus
// 4 * hd * H * visible positions for attention.
// Errors (olmo::Error): a position beyond max_len or the model's max_seq_len, a token id outside
// the vocabulary, a bad sequence index, prefill on a sequence that is not empty.
#pragma once
#include <cstdint>
#include <vector>

#include "model/olmo3.h"

namespace olmo::model {

class KvCache {
 public:
  KvCache(const ModelConfig& c, int64_t batch, int64_t max_len);
  int64_t batch() const { return batch_; }
  int64_t max_len() const { return max_len_; }
  int64_t slots(int64_t layer) const { return slots_[size_t(layer)]; }
  // [slots, KV, hd] of sequence b in `layer`.
  float* k(int64_t layer, int64_t b) { return k_[size_t(layer)].data() + b * stride(layer); }
  float* v(int64_t layer, int64_t b) { return v_[size_t(layer)].data() + b * stride(layer); }
  // Writes the K/V rows [n, KV*hd] of positions pos..pos+n-1 of sequence b into `layer`'s ring
  // (of a long run only the last slots(layer) positions land: the ones a query can still see).
  void store(int64_t layer, int64_t b, int64_t pos, int64_t n, const float* k, const float* v);
  int64_t length(int64_t b) const { return len_[size_t(b)]; }  // = next position of b
  void set_length(int64_t b, int64_t n) { len_[size_t(b)] = n; }
  void reset(int64_t b) { len_[size_t(b)] = 0; }
  size_t bytes() const;
  // bytes() of a cache of this shape, without allocating it.
  static size_t bytes_for(const ModelConfig& c, int64_t batch, int64_t max_len);

 private:
  int64_t stride(int64_t layer) const { return slots_[size_t(layer)] * kv_dim_; }
  int64_t batch_, max_len_, kv_dim_;
  std::vector<int64_t> slots_, len_;
  std::vector<FloatBuffer> k_, v_;
};

class Decoder {
 public:
  // The model must outlive the decoder. max_len <= model max_seq_len.
  Decoder(Olmo3& m, int64_t batch, int64_t max_len);
  KvCache& cache() { return cache_; }
  const ModelConfig& config() const { return m_.config(); }

  // Sequence b must be empty (cache.reset(b)); runs tokens[0..n) at positions 0..n-1, stores
  // their K/V and writes the logits of token n-1 to logits[V].
  void prefill(int64_t b, const int32_t* tokens, int64_t n, float* logits);
  // seq[i] (distinct, each non-empty) gets tokens[i] at position cache.length(seq[i]);
  // logits [rows, V].
  void step(const int64_t* seq, const int32_t* tokens, int64_t rows, float* logits);

 private:
  Olmo3& m_;
  KvCache cache_;
};

}  // namespace olmo::model
