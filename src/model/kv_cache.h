// Incremental OLMo 3 inference with a KV cache (the same math as Olmo3's forward, olmo3.h, one
// new token per sequence per step instead of the whole context).
//
// KvCache: per layer and sequence, K and V (after QK-norm and RoPE) as [slots, KV, hd] fp32.
// Full-attention layers keep every position (slots = max_len); sliding layers keep only their
// window (slots = min(window, max_len)), as a ring: position p lives in slot p % slots. A query
// at position p of a layer with window w sees positions max(0, p-w+1)..p, which are exactly the
// ones still in the ring. Memory: sum over layers of 2 * batch * slots * KV * hd floats.
//
// Decoder: prefill(b, prompt) runs a whole prompt of sequence b at once (GEMMs over its tokens,
// the tiled attention kernel) and stores its K/V; step() then advances any set of sequences by
// one token each, sequences at different positions in one batch (prompts of different lengths
// need no padding). The step's attention is a plain loop: one query row per (sequence, head)
// against the cached keys, softmax in fp32 with the max subtracted. Both return the last
// token's logits [V] per sequence. RoPE uses the model's tables (YaRN on the layers
// ModelConfig::yarn_on_layer selects).
// Cost per step: the weight GEMMs (2 * params flops per token, bandwidth-bound at batch 1) plus
// 4 * hd * H * visible positions for attention.
// Errors (olmo::Error): a position beyond max_len or the model's max_seq_len, a token id outside
// the vocabulary, a bad sequence index, prefill on a sequence that is not empty.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/rope.h"
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
  Decoder(const Olmo3& m, int64_t batch, int64_t max_len);
  KvCache& cache() { return cache_; }
  const ModelConfig& config() const { return m_.config(); }

  // Sequence b must be empty (cache.reset(b)); runs tokens[0..n) at positions 0..n-1, stores
  // their K/V and writes the logits of token n-1 to logits[V].
  void prefill(int64_t b, const int32_t* tokens, int64_t n, float* logits);
  // seq[i] (distinct, each non-empty) gets tokens[i] at position cache.length(seq[i]);
  // logits [rows, V].
  void step(const int64_t* seq, const int32_t* tokens, int64_t rows, float* logits);

 private:
  void ensure(int64_t n);
  // Runs the blocks over n tokens held in x_ (in place), given the K/V attention for each layer.
  template <class Attend>
  void blocks(int64_t n, Attend&& attend);
  void logits_of(const float* x, int64_t n, float* logits);

  const Olmo3& m_;
  KvCache cache_;
  kernels::RopeTable rope_, rope_yarn_;
  int64_t cap_ = 0;  // rows the scratch holds
  FloatBuffer x_, h_, t_, q_, k_, v_, o_, g_, u_, s_, r_, xf_;
  FloatBuffer att_;  // attention scratch: prefill lse [H, n] or step scores [batch, H, max_len]
};

}  // namespace olmo::model
