// The OLMo 3 decoder-only transformer in fp32 on CPU: forward, backward and loss of one
// micro-batch (spec 2.1-2.6; HF Olmo3ForCausalLM semantics):
//   x0 = embed[tokens]
//   per block:  q = rmsnorm_q(x Wq^T), k = rmsnorm_k(x Wk^T)   (QK-norm over the full width)
//               v = x Wv^T;  q, k <- RoPE (rotate_half; the YaRN table on the layers
//               ModelConfig::yarn_on_layer selects);  o = attention(q, k, v) (causal,
//               window per layer, optional doc mask, GQA);  h = x + rmsnorm_attn(o Wo^T)
//               out = h + rmsnorm_ffn(Wdown (silu(h Wgate^T) * h Wup^T))
//   logits = rmsnorm_final(x_L) lm_head^T;  loss via the fused chunked LM-head kernel.
// Parameters and gradients are one flat fp32 buffer each (layout: params.h, HF names).
// Memory: activations kept for backward grow linearly in B*T (flops.h activation_floats_per_token
// per token, allocated once and reused while B*T does not grow); attention and loss kernels never
// hold T x T scores or N x V logits. All matmuls go through kernels::gemm (oneDNN).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/loss.h"
#include "kernels/rope.h"
#include "model/config.h"
#include "model/params.h"

namespace olmo::model {

// 64-byte aligned, zero-initialised fp32 array (movable, not copyable).
class FloatBuffer {
 public:
  FloatBuffer() = default;
  explicit FloatBuffer(size_t n);
  float* data() const { return p_.get(); }
  size_t size() const { return n_; }

 private:
  struct Free {
    void operator()(float* p) const;
  };
  std::unique_ptr<float, Free> p_;
  size_t n_ = 0;
};

class Olmo3 {
 public:
  explicit Olmo3(const ModelConfig& c);  // validates c; params and grads zero
  Olmo3(Olmo3&&) noexcept;
  Olmo3& operator=(Olmo3&&) noexcept;
  ~Olmo3();

  const ModelConfig& config() const { return cfg_; }
  const std::vector<ParamInfo>& params_info() const { return layout_.info; }
  const ParamLayout& layout() const { return layout_; }
  float* params() { return params_.data(); }
  const float* params() const { return params_.data(); }
  float* grads() { return grads_.data(); }
  const float* grads() const { return grads_.data(); }
  size_t num_params() const { return layout_.total; }

  // Truncated normal N(0, 0.02^2) cut at +-3 sigma for every matrix (embedding, projections,
  // lm_head), 1 for every norm weight. Deterministic in `seed` (not torch's RNG stream), and
  // independent of the thread count.
  void init_weights(uint64_t seed);
  void zero_grad();

  // One micro-batch: tokens/targets [B,T] int32 (targets -100 = ignored), doc_ids [B,T] or null
  // (intra-document attention masking). Accumulates grad_scale * d(ce_sum + z_coef*z_sum)/dparams
  // into grads() and returns the sums (loss = (ce_sum + z_coef*z_sum) / count).
  kernels::LossSums forward_backward(const int32_t* tokens, const int32_t* targets,
                                     const int32_t* doc_ids, int64_t B, int64_t T,
                                     float grad_scale, float z_coef);
  // Loss sums only, no gradients (evaluation).
  kernels::LossSums forward_loss(const int32_t* tokens, const int32_t* targets,
                                 const int32_t* doc_ids, int64_t B, int64_t T, float z_coef);
  // Full logits [B,T,V] (causal; doc_ids [B,T] or null as in forward_backward). Holds B*T*V
  // floats: for inference/tests only.
  void forward_logits(const int32_t* tokens, int64_t B, int64_t T, float* logits,
                      const int32_t* doc_ids = nullptr);

  // Bytes of activation + scratch buffers currently allocated (for the memory-plan test).
  size_t activation_bytes() const;

 private:
  struct Acts;
  void ensure(int64_t B, int64_t T);
  void forward(const int32_t* tokens, const int32_t* doc_ids, int64_t B, int64_t T);
  void backward(const int32_t* tokens, const int32_t* doc_ids, int64_t B, int64_t T);

  ModelConfig cfg_;
  ParamLayout layout_;
  FloatBuffer params_, grads_;
  kernels::RopeTable rope_;       // plain RoPE
  kernels::RopeTable rope_yarn_;  // YaRN (when cfg_.yarn is enabled; layers per yarn_on_layer)
  const kernels::RopeTable& rope_for(int64_t layer) const;
  std::unique_ptr<Acts> acts_;
};

}  // namespace olmo::model
