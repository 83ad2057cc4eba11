// Parameter counts, FLOPs and memory plan (formulas documented in flops.h).
#include "model/flops.h"

#include <algorithm>

#include "kernels/attention.h"
#include "model/act_checkpoint.h"

namespace olmo::model {

ParamCounts count_params(const ModelConfig& c) {
  const int64_t D = c.d_model, Q = c.q_dim(), K = c.kv_dim(), F = c.ffn_hidden, V = c.vocab_size;
  ParamCounts p;
  p.embedding = V * D;
  p.matmul_per_layer = D * Q + 2 * D * K + Q * D + 3 * D * F;
  p.per_layer = p.matmul_per_layer + Q + K + 2 * D;
  p.blocks = c.n_layers * p.per_layer;
  p.final_norm = D;
  p.lm_head = V * D;
  p.total = p.embedding + p.blocks + p.final_norm + p.lm_head;
  p.non_embedding = p.total - p.embedding;
  return p;
}

double avg_keys_attended(int64_t w, int64_t S) {
  return S <= 0 ? 0 : kernels::causal_pairs(S, w) / double(S);
}

double block_forward_flops_per_token(const ModelConfig& c, int64_t l, int64_t S) {
  return 2.0 * double(count_params(c).matmul_per_layer) +
         4.0 * double(c.n_heads) * double(c.head_dim) * avg_keys_attended(c.layer_window[l], S);
}

double flops_per_token(const ModelConfig& c, int64_t S) {
  ParamCounts p = count_params(c);
  double f = 0;
  for (int64_t l = 0; l < c.n_layers; ++l)
    f += 6.0 * double(p.matmul_per_layer) +
         12.0 * double(c.n_heads) * double(c.head_dim) * avg_keys_attended(c.layer_window[l], S);
  return f + 6.0 * double(p.lm_head);
}

double recompute_flops_per_token(const ModelConfig& c, int64_t S) {
  const std::vector<char> ck = checkpointed_blocks(c);
  double f = 0;
  for (int64_t l = 0; l < c.n_layers; ++l)
    if (ck[size_t(l)]) f += block_forward_flops_per_token(c, l, S);
  return f;
}

double olmo_core_flops_per_token(const ModelConfig& c, int64_t S) {
  ParamCounts p = count_params(c);
  return 6.0 * double(p.non_embedding) +
         12.0 * double(c.n_layers) * double(c.n_heads) * double(c.head_dim) * double(S);
}

// Per layer per token: x, a (o_proj out), h, f (down_proj out) [D each]; q_raw, q_rope, attn out
// [Q each]; k_raw, k_rope, v [KVd each]; gate, up [F each]; rstd of q/k/attn/ffn norms [4];
// attention log-sum-exp [H]. After the last layer: x_L and the final-normed x [D each] + rstd.
int64_t block_activation_floats_per_token(const ModelConfig& c) {
  const int64_t D = c.d_model, Q = c.q_dim(), K = c.kv_dim(), F = c.ffn_hidden;
  return 4 * D + 3 * Q + 3 * K + 2 * F + 4 + c.n_heads;
}

// A checkpointed block keeps x [D]; the recompute slot holds the rest of one block.
int64_t activation_floats_per_token(const ModelConfig& c, const std::vector<char>& ckpt) {
  const int64_t per_layer = block_activation_floats_per_token(c), D = c.d_model;
  int64_t n = 0;
  bool any = false;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const bool k = ckpt[size_t(l)] != 0;
    n += k ? D : per_layer;
    any = any || k;
  }
  return n + (any ? per_layer - D : 0) + 2 * D + 1;
}

int64_t activation_floats_per_token(const ModelConfig& c) {
  return activation_floats_per_token(c, checkpointed_blocks(c));
}

// Reused across layers: residual gradient and one more [D] (norm outputs forward, d(norm input)
// backward), swiglu out / d(gate) / d(up) [F each], d(attn out) and dq [Q each], dk, dv and
// d(k_raw) [KVd each].
int64_t scratch_floats_per_token(const ModelConfig& c) {
  const int64_t D = c.d_model, Q = c.q_dim(), K = c.kv_dim(), F = c.ffn_hidden;
  return 2 * D + 3 * F + 2 * Q + 3 * K;
}

MemoryPlan memory_plan(const ModelConfig& c, int64_t seq_len, int64_t micro_batch,
                       int64_t processes, bool exact, int64_t micro_batches_per_rank,
                       bool exact_local, int zero_stage, bool overlap) {
  ParamCounts p = count_params(c);
  const int64_t W = processes < 1 ? 1 : processes;
  const int64_t shard = (p.total + W - 1) / W;  // elements of the largest shard
  MemoryPlan m;
  m.processes = W;
  m.weights = 4 * p.total;
  m.grads = 4 * p.total;
  m.adam_moments = 8 * shard;
  m.grad_shard = (W == 1 && !exact) ? 0 : 4 * shard;
  const bool local = exact_local || W == 1;
  m.reduce_accumulator = exact ? 8 * (local ? p.total : shard) : 0;
  const double ring = double(W - 1) / double(W);
  const double sharded_elem = overlap && zero_stage != 3 ? 4.0 : 8.0;
  const double rs = !exact ? 4.0 * double(p.total)
                    : local ? 8.0 * double(p.total)
                            : sharded_elem * double(p.total) * double(micro_batches_per_rank);
  m.comm_bytes_per_step = int64_t(ring * (rs + 4.0 * double(p.total)));
  if (zero_stage == 3) {
    // Units: the embedding, each block, the head (final norm + lm_head).
    const int64_t unit = std::max({p.embedding, p.per_layer, p.final_norm + p.lm_head});
    m.weights = 4 * shard + 4 * unit;
    m.grads = 4 * unit;
    const double gathers = double(micro_batches_per_rank) * (2.0 * double(p.total) -
                                                             double(p.embedding));
    m.comm_bytes_per_step = int64_t(ring * (rs + 4.0 * gathers));
  }
  m.activations_per_token = 4 * activation_floats_per_token(c);
  m.scratch_per_token = 4 * scratch_floats_per_token(c);
  m.micro_batch_tokens = seq_len * micro_batch;
  m.activations = (m.activations_per_token + m.scratch_per_token) * m.micro_batch_tokens;
  m.total = m.weights + m.grads + m.adam_moments + m.grad_shard + m.reduce_accumulator +
            m.activations;
  return m;
}

}  // namespace olmo::model
