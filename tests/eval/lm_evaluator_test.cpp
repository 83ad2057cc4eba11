// Held-out evaluator tests: LmEvaluator (batches cut to their longest document) against the
// plain reference (each padded instance forwarded at full length, CE summed over its
// supervised positions, one division at the end); the max_instances cap; path expansion
// (file, directory, .mix); bad paths named in the error. (Generation: tests/eval/generate_test.cpp
// and, against transformers' generate(), tests/eval/generate_parity.py.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "core/error.h"
#include "data/eval_dataset.h"
#include "data/token_paths.h"
#include "eval/lm_evaluator.h"
#include "model/config.h"
#include "model/olmo3.h"

namespace fs = std::filesystem;
using namespace olmo;

namespace {

model::ModelConfig tiny() {
  model::ModelConfig c;
  c.name = "t";
  c.d_model = 32;
  c.n_layers = 2;
  c.n_heads = 2;
  c.n_kv_heads = 2;
  c.head_dim = 16;
  c.ffn_hidden = 64;
  c.vocab_size = 128;
  c.layer_window = {8, 0};
  c.max_seq_len = 32;
  return c;
}

fs::path make_docs(const fs::path& dir) {
  fs::create_directories(dir);
  std::mt19937 rng(3);
  std::vector<uint32_t> tok;
  for (int d = 0; d < 11; ++d) {
    int len = 3 + rng() % 45;  // some longer than T = 32: truncated
    for (int i = 0; i < len; ++i) tok.push_back(2 + rng() % 126);
    tok.push_back(0);  // EOS
  }
  fs::path p = dir / "part-0.npy";
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(tok.data()), tok.size() * 4);
  return p;
}

data::FslOptions opts() {
  data::FslOptions o;
  o.eos_id = 0;
  o.pad_id = 1;
  return o;
}

TEST(LmEvaluator, EqualsFullLengthPaddedReference) {
  fs::path dir = fs::temp_directory_path() / ("olmo_eval_test_" + std::to_string(getpid()));
  fs::path file = make_docs(dir);
  model::Olmo3 m(tiny());
  m.init_weights(5);
  const int64_t T = 32;
  data::EvalDataset ds({file.string()}, T, 128, opts());
  double ce = 0;
  int64_t count = 0;
  std::vector<int32_t> in(T), tg(T);
  for (int64_t i = 0; i < ds.size(); ++i) {
    ds.read(i, in.data(), tg.data(), nullptr);
    auto s = m.forward_loss(in.data(), tg.data(), nullptr, 1, T, 0.f);
    ce += s.ce_sum;
    count += s.count;
  }
  for (auto p : {file.string(), dir.string()}) {
    eval::LmEvaluator ev("set", p, T, 128, opts(), 0, 4);
    eval::EvalResult r = ev.run(m);
    EXPECT_EQ(r.instances, ds.size());
    EXPECT_EQ(r.tokens, count);
    EXPECT_NEAR(r.loss, ce / double(count), 1e-6 * r.loss);
    EXPECT_NEAR(r.ppl, std::exp(ce / double(count)), 1e-5 * r.ppl);
  }
  std::ofstream(dir / "v.mix") << "v,part-0.npy\n";
  EXPECT_EQ(data::expand_token_paths((dir / "v.mix").string()).size(), 1u);
  eval::LmEvaluator capped("set", file.string(), T, 128, opts(), 3, 2);
  EXPECT_EQ(capped.run(m).instances, 3);
  try {
    eval::LmEvaluator bad("val_x", (dir / "nope").string(), T, 128, opts(), 0, 2);
    ADD_FAILURE() << "missing path accepted";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("val_x"), std::string::npos) << msg;
    EXPECT_NE(msg.find("nope"), std::string::npos) << msg;
  }
  fs::remove_all(dir);
}

}  // namespace
