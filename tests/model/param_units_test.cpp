// Parameter units and the ParamProvider hooks (model/param_units.h): the units tile the flat
// layout; a model without its own buffers, fed by a provider that hands out copies of one unit
// at a time (poisoning the copy on release and the gradient buffer on grad, so a read after
// release or a missed zeroing shows), gives BITWISE the default model's loss sums, gradients
// and logits, with and without activation checkpointing and document masking, and in
// bf16_mixed (the per-unit bf16 copy against the full one, on each bf16 path: native where the
// CPU has AVX512_BF16, else announced as NOT RUN, and always the emulated one); the hooks come
// in the documented order; init_weights_range equals init_weights' slice; a model without
// storage refuses params().
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/bf16.h"
#include "kernels/bf16_modes.h"
#include "model/olmo3.h"
#include "model/param_units.h"

using namespace olmo::model;

namespace {

ModelConfig cfg(AcMode mode) {
  ModelConfig c;
  c.name = "units-test";
  c.d_model = 48, c.n_layers = 4, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 12;
  c.ffn_hidden = 80, c.vocab_size = 97, c.max_seq_len = 64;
  c.layer_window = {5, 0, 5, 0};
  c.act_ckpt = {mode, 0, 1.0};
  return c;
}

// Holds the full parameters and the gradients (summed over grad_done calls); hands out one unit at a time in scratch
// buffers and records the calls ("a3" acquire unit 3, "r3", "g3", "d3").
class CopyProvider final : public ParamProvider {
 public:
  CopyProvider(std::vector<UnitRange> units, const float* params, size_t n)
      : units_(std::move(units)), params_(params, params + n), grads_(n, 0.0f) {}
  const float* acquire(int64_t u) override {
    log.push_back("a" + std::to_string(u));
    const UnitRange& r = units_[size_t(u)];
    work_.assign(params_.begin() + long(r.begin), params_.begin() + long(r.end));
    return work_.data();
  }
  void release(int64_t u) override {
    log.push_back("r" + std::to_string(u));
    std::fill(work_.begin(), work_.end(), std::numeric_limits<float>::quiet_NaN());
  }
  float* grad(int64_t u) override {
    log.push_back("g" + std::to_string(u));
    gwork_.assign(units_[size_t(u)].size(), 0.0f);
    return gwork_.data();
  }
  void grad_done(int64_t u) override {
    log.push_back("d" + std::to_string(u));
    const UnitRange& r = units_[size_t(u)];
    for (size_t i = 0; i < r.size(); ++i) grads_[r.begin + i] += gwork_[i];
    std::fill(gwork_.begin(), gwork_.end(), std::numeric_limits<float>::quiet_NaN());
  }
  const std::vector<float>& grads() const { return grads_; }
  void clear_grads() { std::fill(grads_.begin(), grads_.end(), 0.0f); }
  std::vector<std::string> log;

 private:
  std::vector<UnitRange> units_;
  std::vector<float> params_, grads_, work_, gwork_;
};

struct Batch {
  int64_t B = 2, T = 16;
  std::vector<int32_t> tok, tgt, doc;
  explicit Batch(int64_t V) {
    std::mt19937_64 g(7);
    for (int64_t i = 0; i < B * T; ++i) {
      tok.push_back(int32_t(g() % V));
      tgt.push_back(i % 5 == 1 ? -100 : int32_t(g() % V));
      doc.push_back(int32_t(i / T) * 10 + (i % T >= 9));
    }
  }
};

}  // namespace

TEST(ParamUnits, TileTheLayoutInOrder) {
  const ModelConfig c = cfg(AcMode::none);
  const ParamLayout L = make_layout(c);
  const std::vector<UnitRange> u = param_units(L);
  ASSERT_EQ(u.size(), size_t(c.n_layers + 2));
  EXPECT_EQ(u[0].begin, 0u);
  EXPECT_EQ(u[0].end, L.layers[0].q);
  for (size_t i = 1; i < u.size(); ++i) EXPECT_EQ(u[i].begin, u[i - 1].end);
  EXPECT_EQ(u.back().begin, L.final_norm);
  EXPECT_EQ(u.back().end, L.total);
  EXPECT_EQ(u[size_t(block_unit(2))].begin, L.layers[2].q);
}

TEST(ParamProvider, GivesTheDefaultModelsBits) {
  // Cases: fp32, fp32 with full activation checkpointing, then bf16_mixed (the per-unit bf16
  // copy vs the full one) on each bf16 path (kernels/bf16_modes.h).
  const auto bf16 = olmo::testing::bf16_modes();
  for (int k = 0; k < 2 + int(bf16.size()); ++k) {
    std::optional<olmo::testing::Bf16ModeGuard> guard;
    if (k >= 2) guard.emplace(bf16[size_t(k - 2)]);
    SCOPED_TRACE(k >= 2 ? bf16[size_t(k - 2)].name : "fp32");
    const AcMode mode = k == 1 ? AcMode::full : AcMode::none;
    ModelConfig c = cfg(mode);
    if (k >= 2) {
      c.precision = Precision::bf16_mixed;
      ASSERT_TRUE(olmo::kernels::bf16_usable());
    }
    Olmo3 ref(c);
    ref.init_weights(5);
    Olmo3 m(c, /*own_storage=*/false);
    EXPECT_THROW(m.params(), olmo::Error);
    CopyProvider p(m.units(), ref.params(), ref.num_params());
    m.set_param_provider(&p);
    EXPECT_THROW(m.grads(), olmo::Error);
    const Batch b(c.vocab_size);
    // Per micro-batch from zero gradients (as dist.reduce=exact runs them; an accumulation in
    // the GEMMs' C and one outside it round differently).
    for (int micro = 0; micro < 2; ++micro) {
      const int32_t* doc = micro ? b.doc.data() : nullptr;
      ref.zero_grad();
      p.clear_grads();
      const auto s1 = ref.forward_backward(b.tok.data(), b.tgt.data(), doc, b.B, b.T, 0.01f, 1e-4f);
      const auto s2 = m.forward_backward(b.tok.data(), b.tgt.data(), doc, b.B, b.T, 0.01f, 1e-4f);
      EXPECT_EQ(s1.ce_sum, s2.ce_sum);
      EXPECT_EQ(s1.z_sum, s2.z_sum);
      ASSERT_EQ(0, std::memcmp(ref.grads(), p.grads().data(), ref.num_params() * sizeof(float)))
          << ac_mode_name(mode) << " case " << k << " micro-batch " << micro;
    }
    // One micro-batch's calls: forward units in order, the head kept through the loss, then
    // the backward from the last block, the embedding's gradient without its weights.
    const int64_t L = c.n_layers, H = head_unit(L);
    std::vector<std::string> want = {"a0", "r0"};
    for (int64_t l = 0; l < L; ++l)
      want.insert(want.end(), {"a" + std::to_string(1 + l), "r" + std::to_string(1 + l)});
    want.insert(want.end(), {"a" + std::to_string(H), "g" + std::to_string(H),
                             "d" + std::to_string(H), "r" + std::to_string(H)});
    for (int64_t l = L - 1; l >= 0; --l) {
      const std::string u = std::to_string(1 + l);
      want.insert(want.end(), {"a" + u, "g" + u, "d" + u, "r" + u});
    }
    want.insert(want.end(), {"g0", "d0"});
    ASSERT_EQ(p.log.size(), 2 * want.size());
    EXPECT_EQ(std::vector<std::string>(p.log.begin() + long(want.size()), p.log.end()), want);
    // Logits (forward only) and the loss without gradients.
    std::vector<float> l1(size_t(b.B * b.T * c.vocab_size)), l2(l1.size());
    ref.forward_logits(b.tok.data(), b.B, b.T, l1.data());
    m.forward_logits(b.tok.data(), b.B, b.T, l2.data());
    EXPECT_EQ(0, std::memcmp(l1.data(), l2.data(), l1.size() * sizeof(float)));
    EXPECT_EQ(ref.forward_loss(b.tok.data(), b.tgt.data(), nullptr, b.B, b.T, 0).ce_sum,
              m.forward_loss(b.tok.data(), b.tgt.data(), nullptr, b.B, b.T, 0).ce_sum);
  }
}

TEST(ParamProvider, InitRangeIsTheSliceOfInit) {
  ModelConfig c = cfg(AcMode::none);
  c.vocab_size = 2000;  // embedding and lm_head span two RNG chunks of 65536
  Olmo3 ref(c);
  ref.init_weights(11);
  const size_t n = ref.num_params();
  for (auto [lo, hi] : {std::pair<size_t, size_t>{0, n}, {100, 70000}, {n / 3, n / 3 + 1},
                        {n - 50, n}, {65000, 66000},
                        {ref.layout().final_norm - 3, ref.layout().final_norm + 9}}) {
    std::vector<float> out(hi - lo, -7.0f);
    ref.init_weights_range(11, out.data(), lo, hi);
    EXPECT_EQ(0, std::memcmp(out.data(), ref.params() + lo, (hi - lo) * sizeof(float)))
        << lo << " " << hi;
  }
}
