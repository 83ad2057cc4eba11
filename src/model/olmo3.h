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
// Activation checkpointing (ModelConfig::act_ckpt, act_checkpoint.h): a checkpointed block keeps
// only its input x [N,D] during the forward; the backward reruns that block's forward into a
// shared one-block recompute slot right before its backward (cost: flops.h
// recompute_flops_per_token). Same kernels on the same inputs: gradients bitwise unchanged.
//
// Precision (ModelConfig::precision): fp32, or bf16_mixed as OLMo-core's FSDP mixed precision
// (param_dtype bf16, reduce_dtype fp32) and PyTorch CPU autocast place it: params() and grads()
// stay fp32 (master weights; the optimizer and checkpoints see only them); every linear layer
// (q, k, v, o, gate, up, down and the LM head) multiplies bf16 inputs -- a bf16 copy of its
// weight and its fp32 input rounded to bf16 -- with fp32 accumulation and fp32 output
// (kernels::gemm_bf16), in the forward and in both backward GEMMs; weight gradients accumulate
// in fp32 (beta = 1 into grads(), across micro-batches too). Attention runs its products in
// bf16 as autocast's SDPA does (kernels/attention_bf16.h: q, k, v, dO, P and dS rounded to bf16,
// fp32 accumulation, softmax in fp32, fp32 out) where kernels::attention_bf16_chosen() (native
// and measured faster than the fp32 kernels on this CPU), else the fp32 kernels. Embedding, RMSNorm, RoPE, SwiGLU, the residual stream, the loss and z-loss stay fp32.
// The bf16 weight copy is refreshed on the first forward after params() was handed out non-const (the
// optimizer step, a checkpoint load), i.e. once per optimizer step, not per micro-batch.
// Extra memory: 2 bytes per matrix parameter plus 4 bf16 scratch buffers of N x max(D, F, Q).
// bf16_mixed needs cpu_has_bf16() (kernels/bf16.h); the constructor refuses it otherwise.
// Parameter units (param_units.h): every forward/backward reads a unit's weights between
// acquire and release and writes its gradient between grad and grad_done. By default these are
// offsets into the model's own flat buffers (no copies, the same kernel calls). With a
// ParamProvider set (ZeRO-3) the model frees its own buffers and the provider supplies each
// unit's weights and takes each unit's gradient.
// One decoder block: block_forward() is the block of every forward -- training, evaluation,
// the activation-checkpoint recompute, and KV-cached generation (forward_cached, kv_cache.h),
// where the cache is its parameter: positions start at each sequence's cached length, the new
// K/V are appended to the cache, and attention runs over cache + new tokens.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "kernels/bf16.h"
#include "kernels/loss.h"
#include "kernels/rope.h"
#include "core/error.h"
#include "model/config.h"
#include "model/param_units.h"
#include "model/params.h"

namespace olmo::model {

class KvCache;  // kv_cache.h

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
  // Validates c; params and grads zero. own_storage false: no full parameter / gradient buffer
  // is ever allocated (a ParamProvider must be set before any forward; ZeRO-3).
  explicit Olmo3(const ModelConfig& c, bool own_storage = true);
  Olmo3(Olmo3&&) noexcept;
  Olmo3& operator=(Olmo3&&) noexcept;
  ~Olmo3();

  const ModelConfig& config() const { return cfg_; }
  Precision precision() const { return cfg_.precision; }
  const std::vector<ParamInfo>& params_info() const { return layout_.info; }
  const ParamLayout& layout() const { return layout_; }
  // Non-const access means "the weights may change": the bf16 copy is refreshed before the
  // next forward (bf16_mixed).
  // The full flat buffers; refused once a ParamProvider holds the parameters.
  float* params() {
    own_storage();
    bf16_stale_ = true;
    return params_.data();
  }
  const float* params() const { return own_storage(), params_.data(); }
  float* grads() { return own_storage(), grads_.data(); }
  const float* grads() const { return own_storage(), grads_.data(); }
  size_t num_params() const { return layout_.total; }
  const std::vector<UnitRange>& units() const { return units_; }

  // Hands the parameters to `p` (which must outlive the model's use; null is refused): from
  // here on every forward/backward gets each unit's weights from p and gives p each unit's
  // gradient, and the model's own full buffers are freed (params(), grads() and zero_grad()
  // throw). bf16_mixed: the bf16 copy then covers the acquired unit only, rebuilt from its
  // fp32 weights at every acquire (the same bits as the full copy).
  // With a provider the starting weights go to the provider's storage: init_weights_range.
  void set_param_provider(ParamProvider* p);
  bool has_param_provider() const { return provider_ != nullptr; }
  // Called with (unit, begin, end) each time the backward completes a unit's gradient for the
  // micro-batch (after the provider's grad_done; param_units.h gives the order: the head, the
  // blocks from the last, the embedding). The data-parallel reducer streams the gradient
  // from here (distributed/grad_stream.h). Empty: none.
  using GradDoneHook = std::function<void(int64_t unit, size_t begin, size_t end)>;
  void set_grad_done_hook(GradDoneHook h) { grad_hook_ = std::move(h); }

  // Truncated normal N(0, 0.02^2) cut at +-3 sigma for every matrix (embedding, projections,
  // lm_head), 1 for every norm weight. Deterministic in `seed` (not torch's RNG stream), and
  // independent of the thread count.
  void init_weights(uint64_t seed);
  // Elements [lo, hi) of the flat vector init_weights(seed) writes, into out[hi - lo] (the same
  // bits; cost: the RNG chunks of 65536 elements that overlap [lo, hi)).
  void init_weights_range(uint64_t seed, float* out, size_t lo, size_t hi) const;
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
  // KV-cached forward (kv_cache.h; its Decoder checks a caller's requests): row i of tokens
  // [B,T] continues sequence seq[i] of `cache` at positions cache.length(seq[i]) .. + T-1; each
  // block appends the rows' K/V to the cache and attends over cache + new tokens; the lengths
  // then advance by T. Either T == 1 (decode: each row at its own position) or every sequence
  // is empty (prefill: the training forward's tiled attention). logits [B, V]: each row's last
  // token. No activations are kept (every block reuses one block's buffers: (block activations
  // + D + 1 + D + F) floats per token).
  void forward_cached(const int32_t* tokens, int64_t B, int64_t T, KvCache& cache,
                      const int64_t* seq, float* logits);

  // Bytes of activation + scratch buffers currently allocated (for the memory-plan test;
  // bf16_mixed adds its bf16 scratch, not its bf16 weight copy).
  size_t activation_bytes() const;
  // bf16_mixed: how often the bf16 weight copy was rebuilt (tests: once per optimizer step).
  int64_t bf16_refreshes() const { return bf16_refreshes_; }

 private:
  struct Acts;
  // The cache of a forward_cached call: sequence seq[b] holds pos[b] positions before it;
  // prefill = every pos[b] is 0 (then T new tokens per row, else one).
  struct CacheView {
    KvCache* cache;
    const int64_t* seq;
    const int64_t* pos;
    bool prefill;
  };
  // Buffers for B*T tokens. keep: every block's activations for the backward (flops.h plan);
  // else (forward_cached) one block's buffers shared by all blocks, x updated in place.
  void ensure(int64_t B, int64_t T, bool keep = true);
  void ensure_rope(int64_t positions);
  // Leaves the head unit acquired (returned); the caller releases it. kv: forward_cached's.
  UnitView forward(const int32_t* tokens, const int32_t* doc_ids, int64_t B, int64_t T,
                   const CacheView* kv = nullptr);
  void block_forward(int64_t l, const UnitView& U, const int32_t* doc_ids, int64_t B, int64_t T,
                     float* x_next, const CacheView* kv = nullptr);
  // Takes the acquired head unit and its open gradient (the LM head's part written).
  void backward(const int32_t* tokens, const int32_t* doc_ids, int64_t B, int64_t T,
                const UnitView& head, const UnitGrad& head_grad);
  void place_bf16();
  void refresh_bf16();
  void own_storage() const {
    OLMO_CHECK(!provider_ && params_.data(), "model '", cfg_.name, "': its parameters are "
               "sharded (dist.zero_stage 3); no full parameter or gradient buffer on this "
               "process");
  }
  // The unit hooks (param_units.h): the provider's, or offsets into params_ / grads_.
  UnitView acquire(int64_t u);
  void release(int64_t u);
  UnitGrad grad(int64_t u);
  void grad_done(int64_t u);
  // Weight matrix at fp32 offset `off` (in unit U) as a GEMM operand in the model's precision.
  struct Operand {
    const float* f = nullptr;
    const kernels::bf16_t* b = nullptr;
  };
  Operand weight(const UnitView& U, size_t off) const;
  // An fp32 activation [n] as a GEMM operand: itself (fp32) or rounded into bf16 scratch `slot`.
  Operand act(const float* x, int64_t n, int slot);
  // gemm() or gemm_bf16() on operands of the model's precision (same contract as gemm()).
  void mm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, Operand A, Operand B, float beta,
          float* C) const;

  ModelConfig cfg_;
  ParamLayout layout_;
  std::vector<UnitRange> units_;
  ParamProvider* provider_ = nullptr;
  GradDoneHook grad_hook_;
  FloatBuffer params_, grads_;
  kernels::RopeTable rope_;       // plain RoPE
  kernels::RopeTable rope_yarn_;  // YaRN (when cfg_.yarn is enabled; layers per yarn_on_layer)
  const kernels::RopeTable& rope_for(int64_t layer) const;
  std::unique_ptr<Acts> acts_;
  std::vector<char> ckpt_;  // per block: 1 = checkpointed (cfg_.act_ckpt)
  bool bf16() const { return cfg_.precision == Precision::bf16_mixed; }
  std::vector<kernels::bf16_t> wb_;      // bf16 copies of the matrices (bf16_mixed)
  struct WbSlot {
    size_t off, at, n;  // fp32 offset, offset in wb_, elements
  };
  std::vector<WbSlot> wb_at_;           // the matrices with a bf16 copy, by fp32 offset
  // With a provider wb_ holds one unit's matrices: wb_[at - wb_base_], unit wb_unit_ (-1: none).
  size_t wb_base_ = 0;
  int64_t wb_unit_ = -1;
  std::vector<kernels::bf16_t> xb_[4];   // bf16 activation scratch (bf16_mixed)
  bool bf16_stale_ = true;
  int64_t bf16_refreshes_ = 0;
};

}  // namespace olmo::model
