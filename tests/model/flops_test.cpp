// FLOPs per token (ours: counted per layer from the actual mask; OLMo-core's formula) and the
// memory plan, checked against brute-force counts, a case worked out by hand (the arithmetic is
// in the comments) and the allocation Olmo3 actually makes.
#include <gtest/gtest.h>

#include "model/config.h"
#include "model/flops.h"
#include "model/olmo3.h"

using namespace olmo::model;

// Average keys per query by enumerating the mask (query i sees j in [max(0, i-w+1), i]).
static double brute_avg_keys(int64_t w, int64_t S) {
  double n = 0;
  for (int64_t i = 0; i < S; ++i)
    for (int64_t j = 0; j <= i; ++j) n += (w <= 0 || i - j < w);
  return n / double(S);
}

TEST(Flops, AvgKeysMatchesMaskCount) {
  for (int64_t S : {1, 2, 7, 64, 100})
    for (int64_t w : {0, 1, 3, 16, 64, 200})
      EXPECT_NEAR(avg_keys_attended(w, S), brute_avg_keys(w, S), 1e-12) << w << " " << S;
}

TEST(Flops, OursCountedPerLayer) {
  ModelConfig c = preset("olmo3-7b");
  const int64_t S = 8192;
  // Per layer by hand: matmul params of a 7B block = 4*4096^2 + 3*4096*11008.
  const double mm = 4.0 * 4096 * 4096 + 3.0 * 4096 * 11008;
  const double keys_full = brute_avg_keys(0, S), keys_swa = brute_avg_keys(4096, S);
  double want = 0;
  for (int64_t l = 0; l < 32; ++l)
    want += 6 * mm + 12.0 * 32 * 128 * (c.layer_window[l] ? keys_swa : keys_full);
  want += 6.0 * 100352 * 4096;
  EXPECT_NEAR(flops_per_token(c, S), want, want * 1e-12);
  // Sliding layers at S = 8192 attend (4096*4097/2 + 4096*4096)/8192 keys on average.
  EXPECT_NEAR(avg_keys_attended(4096, 8192), (4096.0 * 4097 / 2 + 4096.0 * 4096) / 8192, 1e-9);
}

TEST(Flops, OlmoCoreFormulaMatchesSpec) {
  // spec 6.1: 6 * 6,887,575,552 + 12 * 32 * 32 * 128 * 8192 = 54.21 GFLOP/token.
  EXPECT_DOUBLE_EQ(olmo_core_flops_per_token(preset("olmo3-7b"), 8192),
                   6.0 * 6887575552 + 12.0 * 32 * 32 * 128 * 8192);
  EXPECT_NEAR(olmo_core_flops_per_token(preset("olmo3-7b"), 8192) / 1e9, 54.21, 0.005);
}

// Hand-worked case: D 64, 2 layers, 4 heads of 16 (Q = 64), 2 kv heads (KVd = 32), ffn 128,
// vocab 300, seq 32 x micro-batch 3 = 96 tokens.
//   block matmuls  q 64x64 + k 64x32 + v 64x32 + o 64x64 + gate/up/down 3 x 64x128
//                  = 4096 + 2048 + 2048 + 4096 + 24576 = 36,864
//   block norms    q-norm 64 + k-norm 32 + 2 block norms x 64 = 224  -> 37,088 per layer
//   P = embedding 300x64 (19,200) + 2 x 37,088 + final norm 64 + lm_head 19,200 = 112,640
//   weights 4P = 450,560 B; grads 4P = 450,560 B; AdamW moments 8P = 901,120 B (one process)
//   stored activations per token, per layer: x, attn out, h, ffn out (4 x 64), q_raw, q_rope,
//     attn (3 x 64), k_raw, k_rope, v (3 x 32), gate, up (2 x 128), 4 rstd, 4 lse = 808 floats;
//     2 layers + x_L, final-normed x (2 x 64) + 1 rstd = 1,745 floats = 6,980 B
//   scratch per token: 2 x 64 + 3 x 128 + 2 x 64 + 3 x 32 = 736 floats = 2,944 B
//   activations (6,980 + 2,944) x 96 = 952,704 B; total 450,560 x 2 + 901,120 + 952,704
//   = 2,754,944 B.
// Four processes, shard = ceil(112,640 / 4) = 28,160 elements: moments 8 x 28,160 = 225,280 B,
//   reduced-gradient shard 4 x 28,160 = 112,640 B; exact accumulator local 16P = 1,802,240 B,
//   sharded 16 x 28,160 = 450,560 B (16 B/parameter/4).
//   bytes sent per step (ring, 3/4 of each vector): fast (4P + 4P) x 3/4 = 675,840;
//   exact local (16P + 4P) x 3/4 = 1,689,600; exact sharded, 2 micro-batches per rank
//   (2 x 16P + 4P) x 3/4 = 3,041,280.
// Three processes: shard ceil(112,640 / 3) = 37,547: moments 300,376 B, grad shard 150,188 B;
//   fast sends floor(8P x 2/3) = floor(600,746.67) = 600,746 B.
static ModelConfig hand_case() {
  ModelConfig c = preset("olmo3-tiny");
  c.d_model = 64;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 16;
  c.ffn_hidden = 128;
  c.vocab_size = 300;
  c.layer_window = {16, 0};
  return c;
}

TEST(Memory, PlanEqualsHandWorkedCase) {
  const ModelConfig c = hand_case();
  EXPECT_EQ(count_params(c).total, 112640);
  MemoryPlan m = memory_plan(c, 32, 3);
  EXPECT_EQ(m.weights, 450560);
  EXPECT_EQ(m.grads, 450560);
  EXPECT_EQ(m.adam_moments, 901120);
  EXPECT_EQ(m.grad_shard, 0);
  EXPECT_EQ(m.reduce_accumulator, 0);
  EXPECT_EQ(m.comm_bytes_per_step, 0);
  EXPECT_EQ(m.activations_per_token, 6980);
  EXPECT_EQ(m.scratch_per_token, 2944);
  EXPECT_EQ(m.activations, 952704);
  EXPECT_EQ(m.total, 2754944);
  MemoryPlan f4 = memory_plan(c, 32, 3, 4, /*exact=*/false);
  EXPECT_EQ(f4.adam_moments, 225280);
  EXPECT_EQ(f4.grad_shard, 112640);
  EXPECT_EQ(f4.comm_bytes_per_step, 675840);
  EXPECT_EQ(f4.total, 450560 * 2 + 225280 + 112640 + 952704);
  MemoryPlan el = memory_plan(c, 32, 3, 4, true, 2, /*exact_local=*/true);
  EXPECT_EQ(el.reduce_accumulator, 901120);
  EXPECT_EQ(el.comm_bytes_per_step, 1013760);
  MemoryPlan es = memory_plan(c, 32, 3, 4, true, 2, /*exact_local=*/false);
  EXPECT_EQ(es.reduce_accumulator, 225280);
  // Each micro-batch's fp32 gradient (dist.overlap, the default): (2 x 4P + 4P) x 3/4.
  EXPECT_EQ(es.comm_bytes_per_step, 1013760);
  MemoryPlan eq = memory_plan(c, 32, 3, 4, true, 2, false, 2, /*overlap=*/false);
  EXPECT_EQ(eq.comm_bytes_per_step, 1689600);  // int64 rounds: (2 x 8P + 4P) x 3/4
  MemoryPlan f3 = memory_plan(c, 32, 3, 3, false);
  EXPECT_EQ(f3.adam_moments, 300376);
  EXPECT_EQ(f3.grad_shard, 150188);
  EXPECT_EQ(f3.comm_bytes_per_step, 600746);
  // ZeRO-3 at 4 processes, exact local, 2 micro-batches: units are the embedding (19200), each
  // block (37088, the largest) and the head (64 + 19200); weights = the 28160-element shard +
  // one block, grads = one block; traffic = the 8 B/param integer reduce-scatter + two fp32
  // all-gathers per micro-batch (the backward's without the embedding), no update all-gather.
  MemoryPlan z3 = memory_plan(c, 32, 3, 4, true, 2, /*exact_local=*/true, /*zero_stage=*/3);
  EXPECT_EQ(z3.weights, 4 * 28160 + 4 * 37088);
  EXPECT_EQ(z3.grads, 4 * 37088);
  EXPECT_EQ(z3.adam_moments, el.adam_moments);
  EXPECT_EQ(z3.reduce_accumulator, el.reduce_accumulator);
  EXPECT_EQ(z3.comm_bytes_per_step, 3 * (8 * 112640 + 4 * 2 * (2 * 112640 - 19200)) / 4);
  EXPECT_EQ(z3.total, el.total - el.weights - el.grads + z3.weights + z3.grads);
}

// The activation part of the plan against what Olmo3 actually allocates for a micro-batch.
TEST(Memory, ActivationsEqualModelAllocation) {
  ModelConfig c = hand_case();
  Olmo3 model(c);
  EXPECT_EQ(model.num_params(), size_t(112640));
  model.init_weights(1);
  std::vector<int32_t> tok(96), tgt(96);
  for (int i = 0; i < 96; ++i) tok[i] = tgt[i] = (i * 7) % 300;
  model.forward_backward(tok.data(), tgt.data(), nullptr, 3, 32, 1.0f / 96, 1e-5f);
  EXPECT_EQ(int64_t(model.activation_bytes()), memory_plan(c, 32, 3).activations);
}
