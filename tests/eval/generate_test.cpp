// KV-cache decoding and sampling tests:
//  - Decoder (prefill + batched steps, sequences at different positions, sliding layers keeping
//    only their window in a ring; plain RoPE and both YaRN variants) against
//    Olmo3::forward_logits of the whole prefix, every step: rel L2 <= 3e-6 (measured worst
//    2026-12-03, AVX-512, 2 threads: 7.2e-7 plain RoPE, 8.4e-7 / 9.3e-7 YaRN faithful / hf);
//  - one block for both paths (Olmo3::forward_cached is the training forward with the cache as
//    a parameter): a model change moves the cached path too. bf16_mixed is such a change (every
//    GEMM on bf16 operands); the decoder of a bf16_mixed model follows its own bf16 forward,
//    not the fp32 forward of the same weights;
//  - generate(): a prompt's greedy tokens do not depend on the batch it runs in, each equals the
//    argmax of the logits row it was chosen from (step_logits), the prefill row equals the full
//    forward's last row; EOS and context stops; errors;
//  - Sampler: greedy ties, temperature / top-k / top-p distributions against the closed-form
//    probabilities, seed reproducibility.
// The independent reference for generation (token ids and every step's logits) is transformers'
// generate(): tests/eval/generate_parity.py and tests/model/export_parity.py.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/error.h"
#include "eval/generate.h"
#include "eval/sampling.h"
#include "kernels/attention_bf16.h"
#include "kernels/bf16_modes.h"
#include "model/kv_cache.h"
#include "model/olmo3.h"

using namespace olmo;

namespace {

model::ModelConfig tiny() {
  model::ModelConfig c;
  c.name = "t";
  c.d_model = 32;
  c.n_layers = 4;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 8;
  c.ffn_hidden = 64;
  c.vocab_size = 96;
  c.layer_window = {6, 6, 6, 0};
  c.max_seq_len = 40;
  return c;
}

double rel_l2(const float* a, const float* b, int64_t n) {
  double d = 0, r = 0;
  for (int64_t i = 0; i < n; ++i) {
    d += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    r += double(b[i]) * b[i];
  }
  return std::sqrt(d / r);
}

std::vector<uint32_t> random_ids(int n, uint32_t seed, int V) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = rng() % uint32_t(V);
  return v;
}

}  // namespace

TEST(KvCache, SlidingLayersKeepOnlyTheirWindow) {
  model::ModelConfig c = tiny();
  model::KvCache kv(c, 3, 30);
  EXPECT_EQ(kv.slots(0), 6);
  EXPECT_EQ(kv.slots(2), 6);
  EXPECT_EQ(kv.slots(3), 30);
  EXPECT_EQ(kv.bytes(), size_t(2 * 3 * (6 * 3 + 30) * c.kv_dim() * 4));
  model::KvCache small(c, 1, 4);  // window larger than the cache: the cache length bounds it
  EXPECT_EQ(small.slots(0), 4);
  EXPECT_THROW(model::KvCache(c, 1, 41), Error);
}

class DecoderVsForward : public ::testing::TestWithParam<int> {};

// 0: plain RoPE; 1: YaRN faithful (full-attention layers only); 2: YaRN hf (every layer).
TEST_P(DecoderVsForward, StepLogitsEqualFullForwardAtEveryPosition) {
  model::ModelConfig c = tiny();
  if (GetParam() > 0) {
    c.yarn.factor = 4;
    c.yarn.old_context_len = 10;
    c.yarn.variant = GetParam() == 1 ? model::YarnVariant::faithful : model::YarnVariant::hf;
  }
  model::Olmo3 m(c);
  m.init_weights(7);
  const int64_t V = c.vocab_size;
  // Three sequences of different lengths, prefilled with prompts of 3, 9 and 1 tokens, then
  // stepped together (each at its own position) past the window of 6 and to the context end.
  std::vector<std::vector<uint32_t>> seqs = {random_ids(40, 1, V), random_ids(25, 2, V),
                                             random_ids(33, 3, V)};
  std::vector<int64_t> prompt = {3, 9, 1};
  model::Decoder dec(m, 3, c.max_seq_len);
  std::vector<float> lg(size_t(3 * V)), full;
  auto reference = [&](int64_t b, int64_t n) {  // logits of position n-1 of sequence b
    std::vector<int32_t> ids(seqs[size_t(b)].begin(), seqs[size_t(b)].begin() + n);
    full.resize(size_t(n * V));
    m.forward_logits(ids.data(), 1, n, full.data());
    return full.data() + (n - 1) * V;
  };
  double worst = 0;
  for (int64_t b = 0; b < 3; ++b) {
    std::vector<int32_t> ids(seqs[size_t(b)].begin(), seqs[size_t(b)].begin() + prompt[size_t(b)]);
    dec.prefill(b, ids.data(), prompt[size_t(b)], lg.data());
    worst = std::max(worst, rel_l2(lg.data(), reference(b, prompt[size_t(b)]), V));
  }
  int checked = 0;
  for (;;) {
    std::vector<int64_t> rows;
    std::vector<int32_t> tok;
    for (int64_t b = 0; b < 3; ++b) {
      int64_t n = dec.cache().length(b);
      if (n < int64_t(seqs[size_t(b)].size())) {
        rows.push_back(b);
        tok.push_back(int32_t(seqs[size_t(b)][size_t(n)]));
      }
    }
    if (rows.empty()) break;
    dec.step(rows.data(), tok.data(), int64_t(rows.size()), lg.data());
    for (size_t i = 0; i < rows.size(); ++i) {
      double e = rel_l2(lg.data() + i * V, reference(rows[i], dec.cache().length(rows[i])), V);
      EXPECT_LE(e, 3e-6) << "sequence " << rows[i] << " position "
                         << dec.cache().length(rows[i]) - 1;
      worst = std::max(worst, e);
      ++checked;
    }
  }
  EXPECT_EQ(checked, (40 - 3) + (25 - 9) + (33 - 1));
  EXPECT_LE(worst, 3e-6);
  std::printf("decode vs full forward (case %d): %d positions, worst rel L2 %.2e\n", GetParam(),
              checked, worst);
  // The context is full: one more step is refused.
  int64_t b0 = 0;
  int32_t t0 = 1;
  EXPECT_THROW(dec.step(&b0, &t0, 1, lg.data()), Error);
}

INSTANTIATE_TEST_SUITE_P(Rope, DecoderVsForward, ::testing::Values(0, 1, 2));

TEST(Decoder, FollowsTheModelsPrecision) {
  for (const auto& mode : olmo::testing::bf16_modes()) {
    olmo::testing::Bf16ModeGuard guard(mode);
    SCOPED_TRACE(mode.name);
    // Attention in fp32 on both paths (a decode step's always is): the GEMMs make the difference.
    kernels::set_attention_bf16_override(0);
    struct Reset {
      ~Reset() { kernels::set_attention_bf16_override(-1); }
    } reset;
    model::ModelConfig c = tiny();
    model::Olmo3 f32(c);
    f32.init_weights(5);
    c.precision = model::Precision::bf16_mixed;
    model::Olmo3 b16(c);
    b16.init_weights(5);
    const int64_t V = c.vocab_size, n = 30, prompt = 5;
    const std::vector<uint32_t> seq = random_ids(int(n), 9, int(V));
    std::vector<int32_t> ids(seq.begin(), seq.end());
    model::Decoder dec(b16, 1, c.max_seq_len);
    std::vector<float> lg(static_cast<size_t>(V)), full(static_cast<size_t>(n * V)),
        full32(static_cast<size_t>(n * V));
    double same = 0, other = 1e30;  // worst vs b16's forward, least vs f32's forward
    for (int64_t len = prompt; len <= n; ++len) {
      if (len == prompt) {
        dec.prefill(0, ids.data(), prompt, lg.data());
      } else {
        int64_t b = 0;
        dec.step(&b, &ids[size_t(len - 1)], 1, lg.data());
      }
      b16.forward_logits(ids.data(), 1, len, full.data());
      f32.forward_logits(ids.data(), 1, len, full32.data());
      same = std::max(same, rel_l2(lg.data(), full.data() + (len - 1) * V, V));
      other = std::min(other, rel_l2(lg.data(), full32.data() + (len - 1) * V, V));
    }
    std::printf("%s: bf16_mixed decoder vs its forward: worst rel L2 %.2e; vs the fp32 forward: "
                "least %.2e\n", mode.name, same, other);
    EXPECT_LE(same, 1e-5);  // measured 5.3e-8 (emulated, AVX2)
    EXPECT_GE(other, 1e-3);  // measured 4.1e-3: the test tells the precisions apart
  }
}

TEST(Decoder, BadInputIsRefused) {
  model::Olmo3 m(tiny());
  model::Decoder dec(m, 2, 20);
  std::vector<float> lg(size_t(tiny().vocab_size));
  std::vector<int32_t> ids(21, 1);
  EXPECT_THROW(dec.prefill(0, ids.data(), 21, lg.data()), Error);   // longer than the cache
  EXPECT_THROW(dec.prefill(2, ids.data(), 3, lg.data()), Error);    // no such sequence
  int64_t s = 1;
  int32_t t = 1;
  EXPECT_THROW(dec.step(&s, &t, 1, lg.data()), Error);              // not prefilled
  dec.prefill(0, ids.data(), 3, lg.data());
  EXPECT_THROW(dec.prefill(0, ids.data(), 3, lg.data()), Error);    // not empty
  ids[0] = 96;
  EXPECT_THROW(dec.prefill(1, ids.data(), 3, lg.data()), Error);    // token outside vocab
}

TEST(Generate, GreedyBatchEqualsEachPromptAloneAndArgmaxOfItsLogits) {
  model::Olmo3 m(tiny());
  m.init_weights(11);
  std::vector<std::vector<uint32_t>> prompts = {random_ids(2, 4, 96), random_ids(13, 5, 96),
                                                random_ids(7, 6, 96)};
  eval::GenerateOptions o;
  o.max_new_tokens = 20;
  std::vector<std::vector<float>> rows;
  o.step_logits = &rows;
  eval::Generation g = eval::generate(m, prompts, o);
  ASSERT_EQ(rows.size(), prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    std::vector<std::vector<float>> alone_rows;
    o.step_logits = &alone_rows;
    eval::Generation alone = eval::generate(m, {prompts[i]}, o);
    EXPECT_EQ(g.tokens[i], alone.tokens[0]) << "prompt " << i << ": batch vs alone";
    EXPECT_EQ(g.finish[i], "length");
    ASSERT_EQ(rows[i].size(), g.tokens[i].size() * 96);
    for (size_t k = 0; k < g.tokens[i].size(); ++k)
      EXPECT_EQ(int64_t(g.tokens[i][k]), eval::argmax(rows[i].data() + k * 96, 96))
          << "prompt " << i << " token " << k;
    // The first row is the prefill's: the last row of a full forward of the prompt.
    std::vector<int32_t> ids(prompts[i].begin(), prompts[i].end());
    std::vector<float> full(ids.size() * 96);
    m.forward_logits(ids.data(), 1, int64_t(ids.size()), full.data());
    EXPECT_LE(rel_l2(rows[i].data(), full.data() + (ids.size() - 1) * 96, 96), 1e-6) << i;
  }
  o.step_logits = nullptr;
  EXPECT_EQ(g.stats.new_tokens, 60);
  EXPECT_EQ(g.stats.decode_steps, 19);
  EXPECT_EQ(g.stats.prompt_tokens, 22);
  // EOS: stop right after the first occurrence of a token greedy emits.
  o.eos_id = g.tokens[1][4];
  eval::Generation e = eval::generate(m, prompts, o);
  size_t first = size_t(std::find(g.tokens[1].begin(), g.tokens[1].end(), uint32_t(o.eos_id)) -
                        g.tokens[1].begin());
  EXPECT_EQ(e.tokens[1], std::vector<uint32_t>(g.tokens[1].begin(), g.tokens[1].begin() + first + 1));
  EXPECT_EQ(e.finish[1], "eos");
  // The context (40) ends generation: a 35-token prompt gets 5 new tokens.
  o.eos_id = -1;
  eval::Generation cx = eval::generate(m, {random_ids(35, 8, 96)}, o);
  EXPECT_EQ(cx.tokens[0].size(), 5u);
  EXPECT_EQ(cx.finish[0], "context");
  // vocab_limit: only ids below it.
  o.vocab_limit = 10;
  for (auto& t : eval::generate(m, prompts, o).tokens)
    for (auto id : t) EXPECT_LT(id, 10u);
}

TEST(Generate, BadInputNamesTheProblem) {
  model::Olmo3 m(tiny());
  eval::GenerateOptions o;
  try {
    eval::generate(m, {random_ids(3, 1, 96), random_ids(40, 1, 96)}, o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("prompt 1 has 40 tokens but the model's context is 40"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(eval::generate(m, {{}}, o), Error);
  EXPECT_THROW(eval::generate(m, {}, o), Error);
  EXPECT_THROW(eval::generate(m, {{1, 2, 96}}, o), Error);
  o.sampling.temperature = -1;
  EXPECT_THROW(eval::generate(m, {{1, 2}}, o), Error);
}

TEST(Generate, SamplingIsReproducibleForASeed) {
  model::Olmo3 m(tiny());
  m.init_weights(12);
  std::vector<std::vector<uint32_t>> prompts = {random_ids(4, 1, 96), random_ids(9, 2, 96)};
  eval::GenerateOptions o;
  o.max_new_tokens = 16;
  o.sampling.temperature = 1.5;
  o.sampling.top_k = 40;
  o.sampling.top_p = 0.95;
  o.sampling.seed = 5;
  auto a = eval::generate(m, prompts, o).tokens;
  EXPECT_EQ(a, eval::generate(m, prompts, o).tokens);
  o.sampling.seed = 6;
  EXPECT_NE(a, eval::generate(m, prompts, o).tokens);
  o.sampling.temperature = 0;  // greedy ignores the seed
  auto g5 = eval::generate(m, prompts, o).tokens;
  o.sampling.seed = 5;
  EXPECT_EQ(eval::generate(m, prompts, o).tokens, g5);
}

TEST(Sampler, ArgmaxTakesTheFirstMaximum) {
  float x[] = {1, 3, 3, NAN, 2};
  EXPECT_EQ(eval::argmax(x, 5), 1);
  float y[] = {NAN, 0, -1};
  EXPECT_EQ(eval::argmax(y, 3), 1);
}

namespace {
// Empirical frequencies of `draws` samples.
std::vector<double> freq(const eval::SamplingParams& p, const std::vector<float>& logits,
                         int draws) {
  eval::Sampler s(p, 0);
  std::vector<double> f(logits.size(), 0);
  for (int i = 0; i < draws; ++i) f[size_t(s.next(logits.data(), int64_t(logits.size())))] += 1;
  for (auto& v : f) v /= draws;
  return f;
}
void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "id " << i;
}
}  // namespace

TEST(Sampler, DistributionsMatchTheClosedForm) {
  const std::vector<float> lg = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
  const int N = 40000;
  const double tol = 0.012;  // > 4 sigma of a binomial frequency at N = 40000
  eval::SamplingParams p;
  p.temperature = 1;
  p.seed = 3;
  expect_near(freq(p, lg, N), {0.5, 0.3, 0.2}, tol);
  p.temperature = 0.5;  // p^2 renormalised
  expect_near(freq(p, lg, N), {0.25 / 0.38, 0.09 / 0.38, 0.04 / 0.38}, tol);
  p.temperature = 1;
  p.top_k = 2;
  expect_near(freq(p, lg, N), {0.625, 0.375, 0}, tol);
  p.top_k = 0;
  p.top_p = 0.6;  // mass before id 1 is 0.5 < 0.6: kept; before id 2 is 0.8: dropped
  expect_near(freq(p, lg, N), {0.625, 0.375, 0}, tol);
  p.top_p = 0.5;  // mass before id 1 is 0.5, not < 0.5: only id 0
  expect_near(freq(p, lg, N), {1, 0, 0}, 0);
  p.top_p = 1;
  p.top_k = 1;
  expect_near(freq(p, lg, 200), {1, 0, 0}, 0);
}

TEST(Sampler, BadParametersAreNamed) {
  eval::SamplingParams p;
  p.top_p = 0;
  EXPECT_THROW(eval::validate(p), Error);
  p.top_p = 1.5;
  EXPECT_THROW(eval::validate(p), Error);
  p.top_p = 1;
  p.top_k = -1;
  EXPECT_THROW(eval::validate(p), Error);
  p.top_k = 0;
  p.temperature = NAN;
  EXPECT_THROW(eval::validate(p), Error);
}
