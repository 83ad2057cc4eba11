// FLOPs per token (ours: counted per layer from the actual mask; OLMo-core's formula) and the
// memory plan, checked against brute-force counts and the allocation Olmo3 actually makes.
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

TEST(Memory, PlanMatchesModelAllocation) {
  ModelConfig c = preset("olmo3-tiny");
  c.vocab_size = 300;
  MemoryPlan m = memory_plan(c, 32, 3);
  ParamCounts p = count_params(c);
  EXPECT_EQ(m.weights, 4 * p.total);
  EXPECT_EQ(m.grads, 4 * p.total);
  EXPECT_EQ(m.adam_moments, 8 * p.total);
  Olmo3 model(c);
  EXPECT_EQ(model.num_params(), size_t(p.total));
  model.init_weights(1);
  std::vector<int32_t> tok(96), tgt(96);
  for (int i = 0; i < 96; ++i) tok[i] = tgt[i] = (i * 7) % 300;
  model.forward_backward(tok.data(), tgt.data(), nullptr, 3, 32, 1.0f / 96, 1e-5f);
  EXPECT_EQ(int64_t(model.activation_bytes()), m.activations);
  EXPECT_EQ(m.total, m.weights + m.grads + m.adam_moments + m.activations);
}
