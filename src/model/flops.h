// Parameter counts, training FLOPs per token and the training memory plan of an OLMo 3 model.
//
// FLOPs per token (ours, `flops_per_token`; MFU everywhere uses this one). Training = forward +
// backward = 3x the forward matmul work, 2 flops per multiply-add:
//   per layer l:  6 * P_mm  +  12 * H * hd * A_l(S)
//     P_mm    = matmul parameters of a block: q,k,v,o projections + SwiGLU gate/up/down
//               (D*Q + 2*D*KVd + Q*D + 3*D*F); norm weights are not matmul work and not counted.
//     A_l(S)  = average number of keys a query attends in a length-S causal sequence:
//               full layer:     (S+1)/2
//               window w < S:   (w(w+1)/2 + (S-w)*w) / S   (query i sees min(i+1, w) keys)
//               (w >= S is the full-layer value). 12 = 3 (fwd+bwd) * 2 matmuls (QK^T, PV)
//               * 2 flops per multiply-add.
//   plus 6 * V * D for the lm_head matmul. The embedding lookup costs no flops.
// OLMo-core's formula at the time OLMo 3 was trained (`olmo_core_flops_per_token`, spec 6.1):
//   6 * N_ne + 12 * L * H * hd * S, N_ne = total params - input embedding (includes lm_head and
//   norms), no causal halving, no sliding-window reduction.
#pragma once
#include <cstdint>
#include <vector>

#include "model/config.h"

namespace olmo::model {

struct ParamCounts {
  int64_t embedding = 0;        // V*D
  int64_t per_layer = 0;        // one block incl. q/k norm and the two block norms
  int64_t matmul_per_layer = 0; // projections + SwiGLU only
  int64_t blocks = 0;           // n_layers * per_layer
  int64_t final_norm = 0;       // D
  int64_t lm_head = 0;          // V*D
  int64_t total = 0;
  int64_t non_embedding = 0;    // OLMo-core definition: total - embedding (includes lm_head)
};
ParamCounts count_params(const ModelConfig& c);

// Average keys attended per query on a layer with window w (0 = full) at length S (see above).
double avg_keys_attended(int64_t window, int64_t seq_len);
double flops_per_token(const ModelConfig& c, int64_t seq_len);
double olmo_core_flops_per_token(const ModelConfig& c, int64_t seq_len);
// Forward FLOPs per token of block l at length S: 2 * P_mm + 4 * H * hd * A_l(S) (a third of its
// training FLOPs above).
double block_forward_flops_per_token(const ModelConfig& c, int64_t l, int64_t seq_len);
// What activation checkpointing adds per token: the forward of every checkpointed block
// (c.act_ckpt), run again in the backward. 0 for mode none.
double recompute_flops_per_token(const ModelConfig& c, int64_t seq_len);

// Training memory (bytes, fp32 everywhere). Activations: what Olmo3::forward_backward stores per
// token for the backward pass (all layers, checkpointed blocks as c.act_ckpt says), plus
// per-token scratch reused across layers; the loss kernel's fixed-size chunk buffer is not per
// token and not included.
// Per process, data-parallel over W processes with ZeRO-1/2 (src/distributed): full fp32 weights and
// the model's full micro-batch gradient buffer on every rank; AdamW moments, the reduced
// gradient shard and (dist.reduce=exact) the 128-bit fixed-point shard accumulator are 1/W.
// Bytes each rank sends per step (ring algorithms: (W-1)/W of the vector per collective):
//   exact, local accumulator: one 8P-byte int64 reduce-scatter, then one fp32 all-gather;
//   exact, sharded accumulator: every micro-batch round reduce-scatters 8P bytes, then the
//          all-gather;
//   fast:  one fp32 reduce-scatter (4P) and one fp32 all-gather (4P).
struct MemoryPlan {
  int64_t processes = 1;
  int64_t weights = 0, grads = 0, adam_moments = 0;  // 4P, 4P, 8P/W
  int64_t grad_shard = 0;              // 4P/W (0 for W = 1 fast: the gradient buffer is reused)
  int64_t reduce_accumulator = 0;      // exact only: 8P (local) or 8P/W (sharded)
  int64_t comm_bytes_per_step = 0;     // bytes each rank sends per step (receives as many)
  int64_t activations_per_token = 0;   // stored for backward, all layers
  int64_t scratch_per_token = 0;       // reused buffers (one layer's worth of gradients)
  int64_t micro_batch_tokens = 0;      // seq_len * micro_batch
  int64_t activations = 0;             // (activations_per_token + scratch_per_token) * tokens
  int64_t total = 0;                   // all of the above + activations
};
// Floats per token: stored activations and scratch, as allocated by Olmo3 (olmo3.cpp uses these).
// One block without checkpointing (x, a, h, f, q_raw, q, o, k_raw, k, v, gate, up, 4 rstd, lse).
int64_t block_activation_floats_per_token(const ModelConfig& c);
// All blocks + the final norm's, with the blocks `ckpt` marks (1 = checkpointed, size n_layers)
// storing only x [D], plus one recompute slot (a block less its x) when any block is marked.
int64_t activation_floats_per_token(const ModelConfig& c, const std::vector<char>& ckpt);
// The same for the model's own setting (c.act_ckpt, act_checkpoint.h checkpointed_blocks).
int64_t activation_floats_per_token(const ModelConfig& c);
int64_t scratch_floats_per_token(const ModelConfig& c);
// zero_stage 3 (parameters sharded, distributed/zero3_params.h): weights = the 4P/W shard plus one
// working buffer of the largest parameter unit (model/param_units.h), grads = one more such
// buffer; the traffic adds an fp32 all-gather of P per forward and per backward of every
// micro-batch and drops the all-gather after the update.
// Traffic of the exact reduction: the local accumulator sends int64 sums once per step (8 B
// per parameter); the sharded one sends each micro-batch's gradient, as fp32 (4 B, converted
// by its owner) when overlap (dist.overlap; ZeRO-2 only) and as int64 (8 B) otherwise. The
// input embedding counts in full at the element size of the rest (it sends only touched rows,
// int64 under the sharded accumulator: an upper bound unless most rows are touched).
MemoryPlan memory_plan(const ModelConfig& c, int64_t seq_len, int64_t micro_batch,
                       int64_t processes = 1, bool exact = false,
                       int64_t micro_batches_per_rank = 1, bool exact_local = true,
                       int zero_stage = 2, bool overlap = true);

}  // namespace olmo::model
