// Activation checkpointing (model/act_checkpoint.h, olmo3.h): for every mode the gradients and
// loss sums of forward_backward (with gradient accumulation over two micro-batches and document
// masking) and an 8-step AdamW trajectory are BITWISE those of mode none, in fp32 (and the
// gradients in bf16_mixed); the block choice of each mode (OLMo-core's selected_blocks rule, the
// budget rule); the model allocates exactly the plan's activation bytes (flops.h) in every mode;
// bad settings are refused.
// A recompute that is skipped or runs on the wrong input makes the bitwise checks fail (the
// recompute slot then holds another block's activations).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "core/error.h"
#include "kernels/bf16.h"
#include "kernels/bf16_modes.h"
#include "model/flops.h"
#include "model/olmo3.h"
#include "optim/adamw.h"

using namespace olmo::model;

namespace {

ModelConfig cfg(AcMode mode, int64_t interval = 0, double budget = 1.0) {
  ModelConfig c;
  c.name = "ac-test";
  c.d_model = 48, c.n_layers = 6, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 12;
  c.ffn_hidden = 80, c.vocab_size = 97, c.max_seq_len = 64;
  c.layer_window = {5, 5, 5, 0, 5, 0};
  c.act_ckpt = {mode, interval, budget};
  return c;
}

std::vector<ModelConfig> checkpointed_configs() {
  return {cfg(AcMode::full),        cfg(AcMode::selected_blocks, 1),
          cfg(AcMode::selected_blocks, 2), cfg(AcMode::selected_blocks, 4),
          cfg(AcMode::budget, 0, 0.0),     cfg(AcMode::budget, 0, 0.5)};
}

std::string label(const ModelConfig& c) {
  return std::string(ac_mode_name(c.act_ckpt.mode)) + " interval " +
         std::to_string(c.act_ckpt.block_interval) + " budget " +
         std::to_string(c.act_ckpt.budget);
}

struct Batch {
  int64_t B = 2, T = 16;
  std::vector<int32_t> tok, tgt, doc;
  Batch(int64_t V, uint64_t seed) {
    std::mt19937_64 g(seed);
    for (int64_t i = 0; i < B * T; ++i) {
      tok.push_back(int32_t(g() % V));
      tgt.push_back(i % 7 == 2 ? -100 : int32_t(g() % V));
      doc.push_back(int32_t(i / T) * 10 + (i % T >= 9));
    }
  }
};

bool same_bits(const float* a, const float* b, size_t n) {
  return std::memcmp(a, b, n * sizeof(float)) == 0;
}

// One optimizer step: two micro-batches accumulated, then AdamW. Returns the loss sums.
std::vector<double> step(Olmo3& m, olmo::optim::AdamW& opt, int s) {
  m.zero_grad();
  std::vector<double> sums;
  for (int k = 0; k < 2; ++k) {
    Batch b(m.config().vocab_size, uint64_t(100 + 2 * s + k));
    auto r = m.forward_backward(b.tok.data(), b.tgt.data(), b.doc.data(), b.B, b.T, 1.0f / 64,
                                1e-4f);
    sums.push_back(r.ce_sum), sums.push_back(r.z_sum);
  }
  opt.step(m.params(), m.grads(), 1e-2);
  return sums;
}

}  // namespace

TEST(ActCheckpoint, BlockChoice) {
  auto blocks = [](const ModelConfig& c) { return checkpointed_blocks(c); };
  using V = std::vector<char>;
  EXPECT_EQ(blocks(cfg(AcMode::none)), V(6, 0));
  EXPECT_EQ(blocks(cfg(AcMode::full)), V(6, 1));
  EXPECT_EQ(blocks(cfg(AcMode::selected_blocks, 2)), (V{1, 0, 1, 0, 1, 0}));
  EXPECT_EQ(blocks(cfg(AcMode::selected_blocks, 4)), (V{1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(blocks(cfg(AcMode::budget, 0, 1.0)), V(6, 0));
  EXPECT_EQ(blocks(cfg(AcMode::budget, 0, 0.0)), V(6, 1));
  // Budget: the stored activations respect it with the fewest blocks.
  const double none = double(activation_floats_per_token(cfg(AcMode::none)));
  for (double b : {0.3, 0.5, 0.7, 0.9}) {
    const ModelConfig c = cfg(AcMode::budget, 0, b);
    const V m = blocks(c);
    int k = 0;
    for (char x : m) k += x;
    EXPECT_LE(double(activation_floats_per_token(c)), b * none + 1e-9) << b;
    if (k > 0) {  // one block fewer would not fit (k-1 spread blocks)
      ModelConfig fewer = cfg(AcMode::selected_blocks, 1);
      std::vector<char> f(6, 0);
      for (int i = 0, left = k - 1; i < 6 && left > 0; ++i)
        if (m[size_t(i)]) f[size_t(i)] = 1, --left;
      EXPECT_GT(double(activation_floats_per_token(fewer, f)), b * none) << b;
    }
  }
}

TEST(ActCheckpoint, GradientsBitwiseUnchanged) {
  Olmo3 ref(cfg(AcMode::none));
  ref.init_weights(7);
  Batch b1(97, 1), b2(97, 2);
  auto run = [&](Olmo3& m) {
    m.zero_grad();
    auto s1 = m.forward_backward(b1.tok.data(), b1.tgt.data(), b1.doc.data(), 2, 16, 0.5f, 1e-3f);
    auto s2 = m.forward_backward(b2.tok.data(), b2.tgt.data(), nullptr, 2, 16, 0.5f, 1e-3f);
    return std::vector<double>{s1.ce_sum, s1.z_sum, s2.ce_sum, s2.z_sum};
  };
  const std::vector<double> want = run(ref);
  for (const ModelConfig& c : checkpointed_configs()) {
    Olmo3 m(c);
    std::memcpy(m.params(), ref.params(), ref.num_params() * sizeof(float));
    EXPECT_EQ(run(m), want) << label(c);
    EXPECT_TRUE(same_bits(m.grads(), ref.grads(), ref.num_params())) << label(c);
    // The evaluation path (forward only) agrees too.
    auto e = m.forward_loss(b1.tok.data(), b1.tgt.data(), b1.doc.data(), 2, 16, 1e-3f);
    auto r = ref.forward_loss(b1.tok.data(), b1.tgt.data(), b1.doc.data(), 2, 16, 1e-3f);
    EXPECT_EQ(e.ce_sum, r.ce_sum) << label(c);
  }
}

// bf16_mixed: the recompute rounds the same fp32 inputs into the bf16 scratch again, so the
// gradients stay bitwise too, on each bf16 path (kernels/bf16_modes.h: native AVX512_BF16 where
// present, and always OLMO_BF16=emulate's rounding path).
TEST(ActCheckpoint, Bf16MixedGradientsBitwiseUnchanged) {
  for (const auto& mode : olmo::testing::bf16_modes()) {
    olmo::testing::Bf16ModeGuard guard(mode);
    SCOPED_TRACE(mode.name);
    ASSERT_TRUE(olmo::kernels::bf16_usable());
    auto bf = [](ModelConfig c) {
      c.precision = Precision::bf16_mixed;
      return c;
    };
    Olmo3 ref(bf(cfg(AcMode::none)));
    ref.init_weights(5);
    Batch b(97, 4);
    ref.zero_grad();
    const auto want = ref.forward_backward(b.tok.data(), b.tgt.data(), b.doc.data(), 2, 16, 0.5f,
                                           1e-3f);
    for (const ModelConfig& c : {cfg(AcMode::full), cfg(AcMode::selected_blocks, 2)}) {
      Olmo3 m(bf(c));
      std::memcpy(m.params(), ref.params(), ref.num_params() * sizeof(float));
      m.zero_grad();
      const auto got = m.forward_backward(b.tok.data(), b.tgt.data(), b.doc.data(), 2, 16, 0.5f,
                                          1e-3f);
      EXPECT_EQ(got.ce_sum, want.ce_sum) << label(c);
      EXPECT_TRUE(same_bits(m.grads(), ref.grads(), ref.num_params())) << label(c);
    }
  }
}

TEST(ActCheckpoint, TrajectoryBitwiseUnchanged) {
  const int kSteps = 8;
  auto trajectory = [&](const ModelConfig& c, std::vector<float>& final_params) {
    Olmo3 m(c);
    m.init_weights(11);
    olmo::optim::AdamW opt(m.num_params(), {{0, m.num_params(), 0.1, "all"}});
    std::vector<double> losses;
    for (int s = 0; s < kSteps; ++s)
      for (double x : step(m, opt, s)) losses.push_back(x);
    final_params.assign(m.params(), m.params() + m.num_params());
    return losses;
  };
  std::vector<float> p_ref;
  const std::vector<double> want = trajectory(cfg(AcMode::none), p_ref);
  {  // the trajectory moves the weights (Adam steps of ~lr per element)
    Olmo3 init(cfg(AcMode::none));
    init.init_weights(11);
    double moved = 0;
    for (size_t i = 0; i < p_ref.size(); ++i)
      moved = std::max(moved, double(std::fabs(p_ref[i] - init.params()[i])));
    EXPECT_GT(moved, 0.05);
  }
  for (const ModelConfig& c : checkpointed_configs()) {
    std::vector<float> p;
    EXPECT_EQ(trajectory(c, p), want) << label(c);
    EXPECT_TRUE(same_bits(p.data(), p_ref.data(), p.size())) << label(c);
  }
}

TEST(ActCheckpoint, AllocationEqualsPlanAndShrinks) {
  Batch b(97, 3);
  int64_t none_bytes = 0;
  for (const ModelConfig& c : {cfg(AcMode::none), cfg(AcMode::full),
                               cfg(AcMode::selected_blocks, 2), cfg(AcMode::budget, 0, 0.5)}) {
    Olmo3 m(c);
    m.init_weights(1);
    m.forward_backward(b.tok.data(), b.tgt.data(), nullptr, 2, 16, 1.0f, 0.0f);
    const int64_t bytes = int64_t(m.activation_bytes());
    EXPECT_EQ(bytes, memory_plan(c, 16, 2).activations) << label(c);
    if (c.act_ckpt.mode == AcMode::none)
      none_bytes = bytes;
    else
      EXPECT_LT(bytes, none_bytes) << label(c);
  }
  // Full: x of every block + one recompute slot instead of every block's activations.
  const ModelConfig f = cfg(AcMode::full);
  EXPECT_EQ(activation_floats_per_token(f),
            6 * 48 + (block_activation_floats_per_token(f) - 48) + 2 * 48 + 1);
  // Recompute cost: the forward of the checkpointed blocks.
  double fwd = 0;
  for (int64_t l = 0; l < 6; ++l) fwd += block_forward_flops_per_token(f, l, 16);
  EXPECT_EQ(recompute_flops_per_token(f, 16), fwd);
  EXPECT_EQ(recompute_flops_per_token(cfg(AcMode::none), 16), 0.0);
}

TEST(ActCheckpoint, BadSettingsRefused) {
  EXPECT_THROW(Olmo3(cfg(AcMode::selected_blocks, 0)), olmo::Error);
  EXPECT_THROW(Olmo3(cfg(AcMode::budget, 0, 1.5)), olmo::Error);
  EXPECT_THROW(Olmo3(cfg(AcMode::budget, 0, -0.1)), olmo::Error);
  EXPECT_THROW(parse_ac_mode("selected_modules", "here"), olmo::Error);
  EXPECT_EQ(parse_ac_mode("budget", "here"), AcMode::budget);
}
