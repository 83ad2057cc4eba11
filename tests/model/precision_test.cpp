// bf16_mixed precision of the model (olmo3.h): against the fp32 model on the same weights
// (loss and every gradient tensor within bf16 input rounding), fp32 gradient accumulation over
// micro-batches, the bf16 weight copy refreshed once per weight change (not per micro-batch) and
// never stale, and the refusal on a CPU (or ISA level) without native bf16. The bf16 cases run
// on each bf16 path (kernels/bf16_modes.h): native where the CPU has AVX512_BF16 (else announced
// as NOT RUN), and always the emulated one of a CPU without it.
// (Training parity against PyTorch autocast: tests/model/bf16_parity.py.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "core/cpu.h"
#include "core/error.h"
#include "kernels/attention_bf16.h"
#include "kernels/bf16.h"
#include "kernels/bf16_modes.h"
#include "model/olmo3.h"

using namespace olmo::model;
using olmo::testing::Bf16Mode;
using olmo::testing::Bf16ModeGuard;
using olmo::testing::bf16_modes;

namespace {
ModelConfig cfg(Precision p) {
  ModelConfig c;
  c.name = "prec";
  c.d_model = 64, c.n_layers = 4, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 16;
  c.ffn_hidden = 128, c.vocab_size = 300, c.max_seq_len = 64;
  c.layer_window = {8, 8, 8, 0};
  c.precision = p;
  return c;
}

struct Batch {
  int64_t B = 2, T = 32;
  std::vector<int32_t> tok, tgt;
  explicit Batch(uint64_t seed) {
    std::mt19937_64 g(seed);
    for (int64_t i = 0; i < B * T; ++i) {
      tok.push_back(int32_t(g() % 300));
      tgt.push_back(i % T == T - 1 ? -100 : int32_t(g() % 300));
    }
  }
};

double rel_l2(const float* a, const float* b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]), den += double(b[i]) * b[i];
  return std::sqrt(num / (den + 1e-300));
}

}  // namespace

TEST(Precision, DefaultIsFp32) { EXPECT_EQ(ModelConfig{}.precision, Precision::fp32); }

// Rounding a GEMM input to bf16 perturbs it by <= 2^-9 relative (RNE), ~2^-9/sqrt(3) rms; a
// product of two rounded inputs by ~2^-8.6 rms, and over K random-sign terms a GEMM output by
// about the same relative rms, ~2.6e-3. Forward and backward chain ~5 GEMMs per gradient and
// four layers (measured here: 1.0e-2 .. 3.1e-2 rel. L2 per tensor, largest on the last layer's
// q/k norms, whose gradients are sums with cancellation). Bounds: the loss 2e-3 relative (it
// averages over tokens); every gradient tensor 6e-2 rel. L2 (~15 u, u = 2^-8, twice the worst
// seen); logits 2e-2.
TEST(Precision, Bf16TracksFp32OnTheSameWeights) {
  for (const Bf16Mode& mode : bf16_modes()) {
    Bf16ModeGuard guard(mode);
    SCOPED_TRACE(mode.name);
    Olmo3 f(cfg(Precision::fp32)), b(cfg(Precision::bf16_mixed));
    f.init_weights(3);
    b.init_weights(3);
    Batch x(1);
    f.zero_grad();
    b.zero_grad();
    auto sf = f.forward_backward(x.tok.data(), x.tgt.data(), nullptr, x.B, x.T, 1.0f / 62, 1e-4f);
    auto sb = b.forward_backward(x.tok.data(), x.tgt.data(), nullptr, x.B, x.T, 1.0f / 62, 1e-4f);
    const double lf = sf.ce_sum / sf.count, lb = sb.ce_sum / sb.count;
    EXPECT_LT(std::fabs(lf - lb) / lf, 2e-3) << lf << " vs " << lb;
    EXPECT_NE(lf, lb);  // the bf16 path really ran in bf16
    for (const ParamInfo& p : f.params_info()) {
      double e = rel_l2(b.grads() + p.offset, f.grads() + p.offset, p.numel);
      EXPECT_LT(e, 6e-2) << p.name;
    }
    // Logits too (the LM head through gemm_bf16).
    std::vector<float> lgf(size_t(x.B * x.T * 300)), lgb(lgf.size());
    f.forward_logits(x.tok.data(), x.B, x.T, lgf.data());
    b.forward_logits(x.tok.data(), x.B, x.T, lgb.data());
    const double el = rel_l2(lgb.data(), lgf.data(), lgf.size());
    EXPECT_GT(el, 1e-5);
    EXPECT_LT(el, 2e-2);
  }
}

// Weight gradients are accumulated in fp32 (beta = 1 into grads()): two micro-batches summed
// in place equal the two gradients computed apart and added in fp32 up to fp32 rounding (1e-6),
// far below the 2^-9 a bf16 accumulator would cost.
TEST(Precision, Bf16AccumulatesGradientsInFp32) {
  for (const Bf16Mode& mode : bf16_modes()) {
    Bf16ModeGuard guard(mode);
    SCOPED_TRACE(mode.name);
    Olmo3 m(cfg(Precision::bf16_mixed));
    m.init_weights(4);
    Batch x1(2), x2(3);
    const size_t n = m.num_params();
    m.zero_grad();
    m.forward_backward(x1.tok.data(), x1.tgt.data(), nullptr, x1.B, x1.T, 0.01f, 1e-4f);
    std::vector<float> g1(m.grads(), m.grads() + n);
    m.zero_grad();
    m.forward_backward(x2.tok.data(), x2.tgt.data(), nullptr, x2.B, x2.T, 0.01f, 1e-4f);
    std::vector<float> sum(n);
    for (size_t i = 0; i < n; ++i) sum[i] = g1[i] + m.grads()[i];
    m.zero_grad();
    m.forward_backward(x1.tok.data(), x1.tgt.data(), nullptr, x1.B, x1.T, 0.01f, 1e-4f);
    m.forward_backward(x2.tok.data(), x2.tgt.data(), nullptr, x2.B, x2.T, 0.01f, 1e-4f);
    EXPECT_LT(rel_l2(m.grads(), sum.data(), n), 1e-6);
  }
}

TEST(Precision, Bf16WeightsRefreshOncePerChangeAndNeverStale) {
  for (const Bf16Mode& mode : bf16_modes()) {
    Bf16ModeGuard guard(mode);
    SCOPED_TRACE(mode.name);
    Olmo3 m(cfg(Precision::bf16_mixed));
    m.init_weights(5);
    Batch x(4);
    m.zero_grad();
    double l0 = 0;
    for (int mb = 0; mb < 3; ++mb)  // three micro-batches of one step: one refresh
      l0 = m.forward_backward(x.tok.data(), x.tgt.data(), nullptr, x.B, x.T, 0.01f, 0).ce_sum;
    EXPECT_EQ(m.bf16_refreshes(), 1);
    const Olmo3& cm = m;
    (void)cm.params();  // read-only access: no refresh
    m.forward_loss(x.tok.data(), x.tgt.data(), nullptr, x.B, x.T, 0);
    EXPECT_EQ(m.bf16_refreshes(), 1);
    // An "optimizer step" through params(): the next forward sees the new weights.
    float* P = m.params();
    const size_t lm = m.layout().lm_head;
    for (int64_t i = 0; i < 300 * 64; ++i) P[lm + size_t(i)] *= 3.0f;
    const double l1 = m.forward_loss(x.tok.data(), x.tgt.data(), nullptr, x.B, x.T, 0).ce_sum;
    EXPECT_EQ(m.bf16_refreshes(), 2);
    EXPECT_GT(std::fabs(l1 - l0), 1e-3 * std::fabs(l0));
    // init_weights writes the fp32 weights too.
    m.init_weights(6);
    m.forward_loss(x.tok.data(), x.tgt.data(), nullptr, x.B, x.T, 0);
    EXPECT_EQ(m.bf16_refreshes(), 3);
  }
}

TEST(Precision, Bf16RefusedWithoutNativeBf16) {
  olmo::set_isa_override(olmo::Isa::avx2);
  try {
    Olmo3 m(cfg(Precision::bf16_mixed));
    olmo::clear_isa_override();
    FAIL() << "bf16_mixed accepted under the AVX2 kernels";
  } catch (const olmo::Error& e) {
    olmo::clear_isa_override();
    const std::string msg = e.what();
    EXPECT_NE(msg.find("bf16_mixed"), std::string::npos) << msg;
    EXPECT_NE(msg.find("AVX512_BF16"), std::string::npos) << msg;
  }
  Olmo3 ok(cfg(Precision::fp32));  // fp32 is always fine
}

// bf16_mixed runs attention in bf16 where kernels::attention_bf16_chosen() (native or the exact
// emulation): with the choice forced to the fp32 kernels the loss moves (the bf16 attention
// kernels really ran before) and still tracks the fp32 model, with or without native bf16.
TEST(Precision, Bf16AttentionFollowsTheChoice) {
  for (const Bf16Mode& mode : bf16_modes()) {
    Bf16ModeGuard guard(mode);
    SCOPED_TRACE(mode.name);
    struct Reset {
      ~Reset() { olmo::kernels::set_attention_bf16_override(-1); }
    } reset;
    Batch x(7);
    auto loss = [&](Precision p, int attn) {
      olmo::kernels::set_attention_bf16_override(attn);
      Olmo3 m(cfg(p));
      m.init_weights(8);
      return m.forward_loss(x.tok.data(), x.tgt.data(), nullptr, x.B, x.T, 0).ce_sum;
    };
    const double f = loss(Precision::fp32, 0), b1 = loss(Precision::bf16_mixed, 1),
                 b0 = loss(Precision::bf16_mixed, 0);
    EXPECT_EQ(olmo::kernels::attention_bf16_native(), mode.native);
    EXPECT_NE(b1, b0);
    EXPECT_LT(std::fabs(b0 - f) / f, 2e-3);
    EXPECT_LT(std::fabs(b1 - f) / f, 2e-3);
  }
}
