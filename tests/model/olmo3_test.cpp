// The composed OLMo 3 model: backward vs central differences of the forward (per parameter
// tensor, directional derivatives), agreement of the ISA paths, document masking, gradient
// accumulation, logits vs loss consistency, init statistics and bad inputs.
// (HF parity of the same model is tests/model/parity.py.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "core/cpu.h"
#include "core/error.h"
#include "kernels/isa_util.h"
#include "model/olmo3.h"

using namespace olmo::model;

namespace {
ModelConfig small_cfg() {
  ModelConfig c;
  c.name = "test";
  c.d_model = 32, c.n_layers = 4, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 8;
  c.ffn_hidden = 48, c.vocab_size = 50, c.max_seq_len = 64;
  c.layer_window = {3, 3, 3, 0};
  return c;
}

// Random weights on a scale where attention is far from uniform; norms around 1.
void randomize(Olmo3& m, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (const ParamInfo& p : m.params_info())
    for (size_t i = 0; i < p.numel; ++i)
      m.params()[p.offset + i] = p.shape.size() == 1 ? 1.f + 0.2f * nd(g) : 0.2f * nd(g);
}

struct Batch {
  int64_t B = 2, T = 12;
  std::vector<int32_t> tok, tgt, doc;
  explicit Batch(int64_t V, uint64_t seed = 5) {
    std::mt19937_64 g(seed);
    for (int64_t i = 0; i < B * T; ++i) {
      tok.push_back(int32_t(g() % V));
      tgt.push_back(i % 5 == 3 ? -100 : int32_t(g() % V));
      doc.push_back(int32_t(i / T) * 10 + (i % T >= 7));  // two documents in each row
    }
  }
};

double loss_of(const olmo::kernels::LossSums& s, float z) { return (s.ce_sum + z * s.z_sum) / s.count; }
}  // namespace

TEST(Olmo3, BackwardMatchesCentralDifferencesPerTensor) {
  Olmo3 m(small_cfg());
  randomize(m, 1);
  Batch b(50);
  const float z = 0.01f;  // large enough that the z-loss path matters
  m.zero_grad();
  auto s = m.forward_backward(b.tok.data(), b.tgt.data(), b.doc.data(), b.B, b.T, 1.0f, z);
  const double count = double(s.count);
  std::vector<float> grad(m.grads(), m.grads() + m.num_params());
  std::vector<float> p0(m.params(), m.params() + m.num_params());
  std::mt19937_64 g(9);
  std::normal_distribution<double> nd(0, 1);
  double worst = 0;
  for (const ParamInfo& p : m.params_info()) {
    // Direction u restricted to this tensor, |u| = 1; derivative of the mean loss along u.
    std::vector<double> u(p.numel);
    double nu = 0;
    for (auto& x : u) {
      x = nd(g);
      nu += x * x;
    }
    for (auto& x : u) x /= std::sqrt(nu);
    double analytic = 0;
    for (size_t i = 0; i < p.numel; ++i) analytic += grad[p.offset + i] * u[i] / count;
    const double h = 1e-2;
    auto at = [&](double sgn) {
      for (size_t i = 0; i < p.numel; ++i)
        m.params()[p.offset + i] = float(p0[p.offset + i] + sgn * h * u[i]);
      double l = loss_of(m.forward_loss(b.tok.data(), b.tgt.data(), b.doc.data(), b.B, b.T, z), z);
      for (size_t i = 0; i < p.numel; ++i) m.params()[p.offset + i] = p0[p.offset + i];
      return l;
    };
    double numeric = (at(1) - at(-1)) / (2 * h);
    EXPECT_NEAR(analytic, numeric, 5e-4 + 1e-2 * std::fabs(numeric)) << p.name;
    double rel = std::fabs(analytic - numeric) / (1e-3 + std::fabs(numeric));
    worst = std::max(worst, rel);
  }
  std::printf("worst |analytic - numeric| / (1e-3 + |numeric|) over tensors: %.2e\n", worst);
}

TEST(Olmo3, IsaPathsAgree) {
  Batch b(50);
  std::vector<std::vector<float>> grads;
  std::vector<double> losses;
  for (olmo::Isa isa : olmo::testing::isas()) {  // those this CPU lacks: announced
    olmo::set_isa_override(isa);
    Olmo3 m(small_cfg());
    randomize(m, 2);
    auto s = m.forward_backward(b.tok.data(), b.tgt.data(), b.doc.data(), b.B, b.T, 0.05f, 1e-4f);
    losses.push_back(loss_of(s, 1e-4f));
    grads.emplace_back(m.grads(), m.grads() + m.num_params());
  }
  olmo::clear_isa_override();
  for (size_t k = 1; k < grads.size(); ++k) {
    EXPECT_NEAR(losses[k], losses[0], 1e-6 * losses[0]);
    double num = 0, den = 0;
    for (size_t i = 0; i < grads[0].size(); ++i) {
      double d = double(grads[k][i]) - grads[0][i];
      num += d * d;
      den += double(grads[0][i]) * grads[0][i];
    }
    EXPECT_LT(std::sqrt(num / den), 1e-5) << "isa " << k;
  }
}

TEST(Olmo3, DocumentMaskIsolatesDocuments) {
  // With doc masking, the loss on document 2 of a packed row equals running document 2 alone:
  // attention never crosses the boundary and RoPE scores depend only on relative position.
  ModelConfig c = small_cfg();
  c.layer_window = {0, 0, 0, 0};
  Olmo3 m(c);
  randomize(m, 3);
  const int64_t T = 12, split = 5;
  std::vector<int32_t> tok(T), tgt(T, -100), doc(T);
  for (int64_t t = 0; t < T; ++t) tok[t] = int32_t((t * 13 + 4) % 50), doc[t] = t >= split;
  for (int64_t t = split; t + 1 < T; ++t) tgt[t] = tok[t + 1];
  auto packed = m.forward_loss(tok.data(), tgt.data(), doc.data(), 1, T, 1e-4f);
  auto alone = m.forward_loss(tok.data() + split, tgt.data() + split, nullptr, 1, T - split, 1e-4f);
  EXPECT_EQ(packed.count, alone.count);
  EXPECT_NEAR(packed.ce_sum, alone.ce_sum, 1e-5 * alone.ce_sum);
  EXPECT_NEAR(packed.z_sum, alone.z_sum, 1e-5 * alone.z_sum);
  // Without the mask document 1 leaks into document 2.
  auto leaky = m.forward_loss(tok.data(), tgt.data(), nullptr, 1, T, 1e-4f);
  EXPECT_GT(std::fabs(leaky.ce_sum - alone.ce_sum), 1e-3 * alone.ce_sum);
}

TEST(Olmo3, LogitsAgreeWithLossAndGradsAccumulate) {
  Olmo3 m(small_cfg());
  randomize(m, 4);
  Batch b(50);
  const int64_t N = b.B * b.T, V = 50;
  std::vector<float> logits(N * V);
  m.forward_logits(b.tok.data(), b.B, b.T, logits.data());
  double ce = 0, zs = 0;
  int64_t cnt = 0;
  for (int64_t i = 0; i < N; ++i) {
    if (b.tgt[i] < 0) continue;
    double mx = -1e300, se = 0;
    for (int64_t v = 0; v < V; ++v) mx = std::max(mx, double(logits[i * V + v]));
    for (int64_t v = 0; v < V; ++v) se += std::exp(double(logits[i * V + v]) - mx);
    double lse = mx + std::log(se);
    ce += lse - logits[i * V + b.tgt[i]];
    zs += lse * lse;
    ++cnt;
  }
  auto s = m.forward_loss(b.tok.data(), b.tgt.data(), nullptr, b.B, b.T, 1e-5f);
  EXPECT_EQ(s.count, cnt);
  EXPECT_NEAR(s.ce_sum, ce, 1e-5 * ce);
  EXPECT_NEAR(s.z_sum, zs, 1e-5 * zs);
  // forward_backward returns the same sums and accumulates gradients.
  m.zero_grad();
  auto s1 = m.forward_backward(b.tok.data(), b.tgt.data(), nullptr, b.B, b.T, 1.0f, 1e-5f);
  EXPECT_NEAR(s1.ce_sum, s.ce_sum, 1e-6 * s.ce_sum);
  std::vector<float> g1(m.grads(), m.grads() + m.num_params());
  m.forward_backward(b.tok.data(), b.tgt.data(), nullptr, b.B, b.T, 1.0f, 1e-5f);
  double err = 0, den = 0;
  for (size_t i = 0; i < g1.size(); ++i) {
    err = std::max(err, double(std::fabs(m.grads()[i] - 2 * g1[i])));
    den = std::max(den, double(std::fabs(g1[i])));
  }
  EXPECT_LT(err, 1e-5 * den);
  // A smaller batch after a larger one reuses the buffers and gives the same answer.
  auto s_small = m.forward_loss(b.tok.data(), b.tgt.data(), nullptr, 1, b.T, 1e-5f);
  Olmo3 fresh(small_cfg());
  randomize(fresh, 4);
  auto s_fresh = fresh.forward_loss(b.tok.data(), b.tgt.data(), nullptr, 1, b.T, 1e-5f);
  EXPECT_EQ(s_small.ce_sum, s_fresh.ce_sum);
}

TEST(Olmo3, InitWeights) {
  ModelConfig c = small_cfg();
  c.d_model = 64, c.vocab_size = 1000, c.head_dim = 16;
  Olmo3 m(c);
  m.init_weights(42);
  for (const ParamInfo& p : m.params_info()) {
    const float* w = m.params() + p.offset;
    if (p.shape.size() == 1) {
      for (size_t i = 0; i < p.numel; ++i) ASSERT_EQ(w[i], 1.0f) << p.name;
      continue;
    }
    double s = 0, ss = 0, mx = 0;
    for (size_t i = 0; i < p.numel; ++i) s += w[i], ss += double(w[i]) * w[i], mx = std::max(mx, double(std::fabs(w[i])));
    double mean = s / p.numel, sd = std::sqrt(ss / p.numel - mean * mean);
    EXPECT_LE(mx, 0.06 + 1e-7) << p.name;
    EXPECT_NEAR(mean, 0.0, 5 * 0.02 / std::sqrt(double(p.numel))) << p.name;
    // std of N(0, 0.02^2) truncated at 3 sigma = 0.02 * 0.98658.
    EXPECT_NEAR(sd, 0.02 * 0.98658, 0.02 * 6 / std::sqrt(double(p.numel))) << p.name;
  }
  Olmo3 a(c), b2(c);
  a.init_weights(42);
  b2.init_weights(43);
  EXPECT_EQ(std::memcmp(a.params(), m.params(), m.num_params() * 4), 0);
  EXPECT_NE(std::memcmp(b2.params(), m.params(), m.num_params() * 4), 0);
}

TEST(Olmo3, BadInputs) {
  Olmo3 m(small_cfg());
  std::vector<int32_t> tok(70, 1), tgt(70, 1);
  auto msg = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const olmo::Error& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  EXPECT_NE(msg([&] { m.forward_loss(tok.data(), tgt.data(), nullptr, 1, 70, 0); })
                .find("sequence length 70 exceeds max_seq_len 64"),
            std::string::npos);
  tok[3] = 50;
  EXPECT_NE(msg([&] { m.forward_loss(tok.data(), tgt.data(), nullptr, 1, 8, 0); }), "<no error>");
  tok[3] = 1;
  tgt[2] = 77;
  EXPECT_NE(msg([&] { m.forward_loss(tok.data(), tgt.data(), nullptr, 1, 8, 0); }), "<no error>");
  ModelConfig c = small_cfg();
  c.n_kv_heads = 3;
  EXPECT_NE(msg([&] { Olmo3 x(c); }).find("not a multiple of n_kv_heads"), std::string::npos);
}
