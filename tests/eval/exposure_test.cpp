// Canary exposure tests (src/eval/exposure.h): the rank formula on hand-made scores, the
// reference secrets (controls first, distinct, never an inserted secret, deterministic),
// take_per_count, canaries.json errors, the prefix + secret tokenization check with the real
// tokenizer, and the evaluator (batched scoring) on a tiny model against one forward_loss per
// candidate.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "eval/benchmark.h"
#include "eval/exposure.h"

namespace fs = std::filesystem;
using namespace olmo;
using namespace olmo::eval;

namespace {

std::vector<CanarySpec> specs() {
  std::vector<CanarySpec> v;
  const char* secrets[] = {"111111111111", "222222222222", "333333333333", "444444444444",
                           "555555555555"};
  int counts[] = {0, 0, 1, 4, 4};
  for (int i = 0; i < 5; ++i) {
    CanarySpec c;
    c.count = counts[i];
    c.name = std::to_string(c.count) + "-" + std::to_string(i);
    c.secret = secrets[i];
    c.prefix = "The secret code of canary " + c.name + " is";
    c.text = c.prefix + secret_text(c.secret);
    v.push_back(c);
  }
  return v;
}

fs::path write_canaries(const std::vector<CanarySpec>& v, const std::string& tag) {
  nlohmann::json j = nlohmann::json::array();
  for (auto& c : v)
    j.push_back({{"name", c.name}, {"count", c.count}, {"secret", c.secret},
                 {"prefix", c.prefix}, {"text", c.text}});
  fs::path p = fs::temp_directory_path() / ("canaries_" + tag + std::to_string(getpid()) + ".json");
  std::ofstream(p) << j.dump();
  return p;
}

std::string error_of(const std::string& text) {
  fs::path p = fs::temp_directory_path() / ("canaries_bad" + std::to_string(getpid()) + ".json");
  std::ofstream(p) << text;
  try {
    load_canaries(p.string());
  } catch (const Error& e) {
    fs::remove(p);
    return e.what();
  }
  fs::remove(p);
  return "";
}

}  // namespace

TEST(Exposure, RankFormula) {
  int64_t rank = 0;
  // Best of 8: exposure log2 8 = 3.
  EXPECT_DOUBLE_EQ(exposure_from_scores(-1.0, {-2, -3, -4, -5, -6, -7, -8}, &rank), 3.0);
  EXPECT_EQ(rank, 1);
  // Worst of 8: 0.
  EXPECT_DOUBLE_EQ(exposure_from_scores(-9.0, {-2, -3, -4, -5, -6, -7, -8}, &rank), 0.0);
  EXPECT_EQ(rank, 8);
  // Third of 4: log2 4 - log2 3.
  EXPECT_DOUBLE_EQ(exposure_from_scores(-3.5, {-1, -2, -4}, &rank), 2.0 - std::log2(3.0));
  // Ties count for the canary (strictly greater only).
  EXPECT_DOUBLE_EQ(exposure_from_scores(-2.0, {-2, -2, -2}, &rank), 2.0);
}

TEST(Exposure, ReferenceSecrets) {
  auto v = specs();
  auto refs = reference_secrets(v, 50);
  ASSERT_EQ(refs.size(), 50u);
  EXPECT_EQ(refs[0], "111111111111");  // controls first
  EXPECT_EQ(refs[1], "222222222222");
  std::set<std::string> uniq(refs.begin(), refs.end());
  EXPECT_EQ(uniq.size(), refs.size());
  for (auto& r : refs) {
    EXPECT_EQ(r.size(), 12u);
    EXPECT_TRUE(r != "333333333333" && r != "444444444444" && r != "555555555555") << r;
  }
  EXPECT_EQ(reference_secrets(v, 50), refs);       // deterministic
  EXPECT_NE(reference_secrets(v, 50, 7), refs);    // seeded
  auto two = take_per_count(v, 1);
  ASSERT_EQ(two.size(), 3u);  // one per count 0, 1, 4
  EXPECT_EQ(two[2].name, "4-3");
  EXPECT_EQ(secret_text("907"), " 9 0 7");
}

TEST(Exposure, CanaryFileErrors) {
  EXPECT_NE(error_of("{}").find("expected a non-empty list"), std::string::npos);
  EXPECT_NE(error_of(R"([{"name":"a","count":1,"prefix":"p"}])").find("\"secret\""),
            std::string::npos);
  EXPECT_NE(error_of(R"([{"name":"a","count":1,"prefix":"p","secret":"12a"}])")
                .find("not a string of digits"),
            std::string::npos);
  EXPECT_NE(error_of(R"([{"name":"a","count":-1,"prefix":"p","secret":"12"}])").find("count"),
            std::string::npos);
  EXPECT_NE(error_of(R"([{"name":"a","count":1,"prefix":"p","secret":"12"},)"
                     R"({"name":"a","count":1,"prefix":"p","secret":"34"}])")
                .find("duplicate canary name"),
            std::string::npos);
  EXPECT_NE(error_of(R"([{"name":"a","count":1,"prefix":"p","secret":"12"},)"
                     R"({"name":"b","count":1,"prefix":"p","secret":"345"}])")
                .find("secret length"),
            std::string::npos);
  EXPECT_NE(error_of("[").find("not valid JSON"), std::string::npos);
}

TEST(Exposure, EvaluatorMatchesDirectScoring) {
  tokenizer::Tokenizer tok = tokenizer::Tokenizer::load(std::string(OLMO_SOURCE_DIR) +
                                              "/data/tokenizer/cl100k_base.tiktoken");
  auto v = specs();
  fs::path p = write_canaries(v, "ok");
  ExposureEvaluator ev(p.string(), tok, 4, 0);
  EXPECT_EQ(ev.canaries(), 5);
  model::ModelConfig c;
  c.name = "t";
  c.d_model = 32;
  c.n_layers = 2;
  c.n_heads = 2;
  c.n_kv_heads = 2;
  c.head_dim = 16;
  c.ffn_hidden = 64;
  c.vocab_size = 100352;
  c.layer_window = {8, 0};
  c.max_seq_len = 64;
  model::Olmo3 m(c);
  m.init_weights(9);
  ExposureResult r = ev.run(m);
  ASSERT_EQ(r.canaries.size(), 5u);
  for (const CanaryExposure& e : r.canaries) {
    EXPECT_EQ(e.candidates, 4);
    ASSERT_EQ(e.refs.size(), 3u);
    const CanarySpec* s = nullptr;
    for (auto& x : v)
      if (x.name == e.name) s = &x;
    ASSERT_TRUE(s);
    for (auto& ref : e.refs) EXPECT_NE(ref, s->secret);
    std::vector<int32_t> prefix = {int32_t(tok.eos_id())};
    for (uint32_t x : tok.encode(s->prefix)) prefix.push_back(int32_t(x));
    auto enc = [&](const std::string& sec) {
      std::vector<int32_t> out;
      for (uint32_t x : tok.encode(secret_text(sec))) out.push_back(int32_t(x));
      return out;
    };
    EXPECT_EQ(enc(s->secret).size(), 24u);  // " " and digit tokens
    // One forward_loss per candidate (the unbatched path) gives the same scores.
    EXPECT_NEAR(e.ll, continuation_loglik(m, prefix, enc(s->secret), 64), 1e-5 * std::abs(e.ll));
    ASSERT_EQ(e.ref_ll.size(), e.refs.size());
    for (size_t i = 0; i < e.refs.size(); ++i)
      EXPECT_NEAR(e.ref_ll[i], continuation_loglik(m, prefix, enc(e.refs[i]), 64),
                  1e-5 * std::abs(e.ref_ll[i]));
    int64_t rank = 0;
    EXPECT_DOUBLE_EQ(e.exposure, exposure_from_scores(e.ll, e.ref_ll, &rank));
    EXPECT_EQ(rank, e.rank);
  }
  EXPECT_EQ(r.by_count.at(0).canaries, 2);
  EXPECT_EQ(r.by_count.at(4).canaries, 2);
  EXPECT_DOUBLE_EQ(r.by_count.at(4).mean, 0.5 * (r.canaries[3].exposure + r.canaries[4].exposure));
  try {
    ExposureEvaluator(p.string(), tok, 1, 0);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs >= 2 candidates"), std::string::npos);
  }
  fs::remove(p);
  // A text that does not tokenize as prefix + secret is refused.
  v[2].text = v[2].prefix + " 3 3 3";
  fs::path bad = write_canaries(v, "bad");
  try {
    ExposureEvaluator(bad.string(), tok, 8, 0);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("canary '1-2': its text does not tokenize"),
              std::string::npos);
  }
  fs::remove(bad);
}
