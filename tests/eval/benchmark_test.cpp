// Benchmark scorer tests (src/eval/benchmark.h): continuation_loglik (one forward_loss) and the
// batched continuation_logliks against log-softmax of the full logits of each sequence on its
// own (double precision, plain loops), left truncation, chunking, suite
// metrics on hand-computed scores (acc, length-normalised acc, bpb, ties), length measures of
// UTF-8 continuations, the suite file parser's errors (file:line named), tokenization of an item
// with the real dolma2 tokenizer, and the checked-in suites' sizes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "eval/benchmark.h"
#include "model/olmo3.h"

namespace fs = std::filesystem;
using namespace olmo;
using namespace olmo::eval;

namespace {

model::ModelConfig tiny() {
  model::ModelConfig c;
  c.name = "t";
  c.d_model = 32;
  c.n_layers = 2;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.head_dim = 16;
  c.ffn_hidden = 64;
  c.vocab_size = 128;
  c.layer_window = {4, 0};
  c.max_seq_len = 32;
  return c;
}

// Reference: sum over the continuation of log_softmax(logits)[next token], in double.
double ref_loglik(model::Olmo3& m, std::vector<int32_t> seq, size_t ncont) {
  const int64_t T = int64_t(seq.size()), V = m.config().vocab_size;
  std::vector<float> logits(T * V);
  m.forward_logits(seq.data(), 1, T, logits.data());
  double ll = 0;
  for (int64_t t = T - 1 - int64_t(ncont); t < T - 1; ++t) {
    const float* row = logits.data() + t * V;
    double mx = row[0], s = 0;
    for (int64_t v = 1; v < V; ++v) mx = std::max(mx, double(row[v]));
    for (int64_t v = 0; v < V; ++v) s += std::exp(double(row[v]) - mx);
    ll += double(row[seq[t + 1]]) - mx - std::log(s);
  }
  return ll;
}

fs::path tmp_file(const std::string& name, const std::string& text) {
  fs::path p = fs::temp_directory_path() / (name + "_" + std::to_string(getpid()) + ".jsonl");
  std::ofstream(p) << text;
  return p;
}

std::string error_of(const std::string& text) {
  fs::path p = tmp_file("bench_bad", text);
  try {
    load_suite(p.string());
  } catch (const Error& e) {
    fs::remove(p);
    return e.what();
  }
  fs::remove(p);
  return "";
}

}  // namespace

TEST(Benchmark, LoglikEqualsLogSoftmaxOfFullLogits) {
  model::Olmo3 m(tiny());
  m.init_weights(3);
  std::vector<int32_t> prefix = {0, 5, 9, 17, 33, 2, 64, 100}, cont = {7, 7, 120, 3};
  double got = continuation_loglik(m, prefix, cont, 32);
  std::vector<int32_t> seq = prefix;
  seq.insert(seq.end(), cont.begin(), cont.end());
  double want = ref_loglik(m, seq, cont.size());
  EXPECT_NEAR(got, want, 1e-5 * std::abs(want));
  EXPECT_LT(got, 0);
}

TEST(Benchmark, LeftTruncationKeepsTheContinuation) {
  model::Olmo3 m(tiny());
  m.init_weights(4);
  std::vector<int32_t> prefix, cont = {11, 12, 13};
  for (int i = 0; i < 40; ++i) prefix.push_back(2 + (i * 7) % 120);
  bool tr = false;
  double got = continuation_loglik(m, prefix, cont, 20, &tr);
  EXPECT_TRUE(tr);
  std::vector<int32_t> seq(prefix.end() - 17, prefix.end());  // 17 + 3 = max_len 20
  seq.insert(seq.end(), cont.begin(), cont.end());
  EXPECT_NEAR(got, ref_loglik(m, seq, cont.size()), 1e-5 * std::abs(got));
  continuation_loglik(m, {1, 2}, cont, 20, &tr);
  EXPECT_FALSE(tr);
  EXPECT_THROW(continuation_loglik(m, {1}, std::vector<int32_t>(20, 3), 20), Error);
}

TEST(Benchmark, BatchedLogliksEqualOneForwardEach) {
  model::Olmo3 m(tiny());
  m.init_weights(6);
  std::vector<int32_t> prefix;
  for (int i = 0; i < 14; ++i) prefix.push_back(1 + (i * 11) % 125);
  std::vector<std::vector<int32_t>> conts = {
      {5}, {6, 7, 8}, {9, 9, 9, 9, 9, 9, 9, 9, 9, 9}, {127, 0}};
  for (int64_t max_floats : {int64_t(1) << 25, int64_t(1)}) {  // one chunk; one row per chunk
    for (int64_t max_len : {32, 16}) {                          // 16: the long row truncates
      bool tr = false;
      std::vector<double> got = continuation_logliks(m, prefix, conts, max_len, &tr, max_floats);
      EXPECT_EQ(tr, max_len == 16);
      ASSERT_EQ(got.size(), conts.size());
      for (size_t i = 0; i < conts.size(); ++i) {
        double one = continuation_loglik(m, prefix, conts[i], max_len);
        const int64_t drop =
            std::max<int64_t>(0, int64_t(prefix.size() + conts[i].size()) - max_len);
        std::vector<int32_t> seq(prefix.begin() + drop, prefix.end());
        seq.insert(seq.end(), conts[i].begin(), conts[i].end());
        double ref = ref_loglik(m, seq, conts[i].size());
        EXPECT_NEAR(got[i], ref, 1e-5 * std::abs(ref)) << i << " " << max_len;
        EXPECT_NEAR(one, ref, 1e-5 * std::abs(ref)) << i << " " << max_len;
      }
    }
  }
}

TEST(Benchmark, LengthMeasures) {
  EXPECT_EQ(continuation_chars(" caf\xc3\xa9"), 4);  // one leading space excluded, é = 1 char
  EXPECT_EQ(continuation_bytes(" caf\xc3\xa9"), 5);
  EXPECT_EQ(continuation_chars("  ab"), 3);          // only one space is excluded
  EXPECT_EQ(continuation_chars("ab"), 2);
}

TEST(Benchmark, SummaryMetrics) {
  auto item = [](int gold, std::vector<std::pair<double, int64_t>> ll_chars) {
    ItemScore s;
    s.gold = gold;
    std::vector<double> ll, norm;
    for (auto [l, c] : ll_chars) {
      ChoiceScore x;
      x.ll = l;
      x.chars = c;
      x.bytes = c + 1;
      x.tokens = 2;
      s.choices.push_back(x);
    }
    return s;
  };
  // item 0: ll argmax 1 (gold 1), norm argmax 0 (-2/10 > -1.5/3)
  ItemScore a = item(1, {{-2.0, 10}, {-1.5, 3}});
  a.pred = 1;
  a.pred_norm = 0;
  // item 1: gold 0, both wrong
  ItemScore b = item(0, {{-4.0, 4}, {-1.0, 4}});
  b.pred = 1;
  b.pred_norm = 1;
  SuiteResult r = summarize("s", {a, b});
  EXPECT_EQ(r.items, 2);
  EXPECT_DOUBLE_EQ(r.acc, 0.5);
  EXPECT_DOUBLE_EQ(r.acc_len_norm, 0.0);
  const double ln2 = std::log(2.0);
  EXPECT_DOUBLE_EQ(r.bpb, 0.5 * (1.5 / 4 / ln2 + 4.0 / 5 / ln2));
  EXPECT_DOUBLE_EQ(r.ce_loss, 0.5 * (1.5 / 2 + 4.0 / 2));
  EXPECT_EQ(r.forwards, 4);
}

TEST(Benchmark, ScoreItemPicksArgmaxAndFirstOnTies) {
  model::Olmo3 m(tiny());
  m.init_weights(5);
  TokenizedItem it;
  it.id = "x";
  it.gold = 2;
  it.prefix = {0, 4, 8};
  it.choices = {{9, 10}, {9, 10}, {30}, {31, 32, 33}};  // choices 0 and 1 identical: a tie
  it.chars = {2, 2, 1, 30};
  it.bytes = {2, 2, 1, 30};
  ItemScore s = score_item(m, it, 32);
  std::vector<double> ll;
  for (auto& c : s.choices) ll.push_back(c.ll);
  EXPECT_EQ(ll[0], ll[1]);
  int best = 0, bestn = 0;
  for (int i = 1; i < 4; ++i) {
    if (ll[i] > ll[best]) best = i;
    if (ll[i] / it.chars[i] > ll[bestn] / it.chars[bestn]) bestn = i;
  }
  EXPECT_EQ(s.pred, best);
  EXPECT_EQ(s.pred_norm, bestn);
  EXPECT_NE(s.pred, 1);  // the tie goes to index 0
}

TEST(Benchmark, SuiteFileErrorsNameTheLine) {
  const std::string ok = R"({"id":"a","context":"c","choices":[" x"," y"],"gold":1})";
  EXPECT_NE(error_of(ok + "\n{bad\n").find(":2: not valid JSON"), std::string::npos);
  EXPECT_NE(error_of(R"({"id":"a","context":"c","choices":[" x"],"gold":0})").find(">= 2"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"id":"a","context":"c","choices":[" x"," y"],"gold":2})")
                .find(":1: gold = 2 is not a choice index"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"context":"c","choices":[" x"," y"],"gold":0})").find("\"id\""),
            std::string::npos);
  EXPECT_NE(error_of("\n\n").find("holds no items"), std::string::npos);
  try {
    load_suite("/nonexistent/suite.jsonl");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/suite.jsonl: benchmark suite file not found"),
              std::string::npos);
  }
  fs::path p = tmp_file("bench_ok", ok + "\n\n" + ok + "\n" + ok + "\n");
  EXPECT_EQ(load_suite(p.string()).size(), 3u);
  EXPECT_EQ(load_suite(p.string(), 2).size(), 2u);
  fs::remove(p);
}

TEST(Benchmark, TokenizeItemAndCheckedInSuites) {
  tokenizer::Tokenizer tok = tokenizer::Tokenizer::load(std::string(OLMO_SOURCE_DIR) +
                                              "/data/tokenizer/cl100k_base.tiktoken");
  SuiteItem it{"i", "The word \"cat\" means", {" a small animal", " caf\xc3\xa9"}, 0};
  TokenizedItem t = tokenize_item(it, tok);
  ASSERT_EQ(t.prefix[0], 100257);  // eos in front
  std::vector<uint32_t> ctx = tok.encode(it.context);
  EXPECT_EQ(t.prefix.size(), ctx.size() + 1);
  EXPECT_EQ(t.choices[0].size(), tok.encode(" a small animal").size());
  EXPECT_EQ(t.chars[1], 4);
  EXPECT_EQ(t.bytes[1], 5);
  // The checked-in suites: a few hundred items each, all parse.
  for (const char* name : {"gcide_def", "heldout_cont"}) {
    auto items = load_suite(std::string(OLMO_SOURCE_DIR) + "/evalsets/" + name + ".jsonl");
    EXPECT_GE(items.size(), 250u) << name;
    for (auto& x : items) EXPECT_EQ(x.choices.size(), 4u) << x.id;
  }
}
