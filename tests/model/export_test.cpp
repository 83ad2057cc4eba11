// HF export tests (interop/hf_export.h):
//   * export -> import -> export is byte-identical: a trained checkpoint (tests/configs/tiny.yaml, 2
//     steps) exported, a new Trainer started from the export (trainer.init_from_hf), its model
//     exported again and its step-0 checkpoint exported again: same safetensors and config.json
//     bytes, and load_hf gives back the checkpoint's parameters bit for bit;
//   * sharding: a small max shard size gives several shards + an index whose weight_map and
//     total_size are right, which load_hf reads back; overwrite removes stale shards;
//   * vocab slicing, refused output dirs and bad options;
//   * tokenizer.json merges follow the rule (all two-token splits, by (rank, left, right)).
// Linked with olmo_train (tests/model/export.cmake) for the Trainer round trip.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_io.h"
#include "interop/hf_export.h"
#include "model/hf_io.h"
#include "interop/inference_model.h"
#include "train/trainer.h"
#include "model/olmo3.h"

namespace fs = std::filesystem;
using namespace olmo;

namespace {

struct Tmp {
  fs::path dir;
  Tmp() {
    static int n = 0;
    dir = fs::temp_directory_path() /
          ("olmo_export_test_" + std::to_string(getpid()) + "_" + std::to_string(n++));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Tmp() { fs::remove_all(dir); }
};

std::string mix_file(const fs::path& dir) {
  fs::create_directories(dir / "d");
  std::mt19937 rng(1);
  std::vector<uint32_t> tok(64 * 8 * 4);
  for (size_t i = 0; i < tok.size(); ++i) tok[i] = i % 61 == 60 ? 0 : 2 + rng() % 510;
  std::ofstream(dir / "d" / "part-0.npy", std::ios::binary)
      .write(reinterpret_cast<const char*>(tok.data()), std::streamsize(tok.size() * 4));
  std::ofstream(dir / "d.mix") << "d,d/part-0.npy\n";
  return (dir / "d.mix").string();
}

train::Config tiny(const std::string& mix, const fs::path& run, std::vector<std::string> more = {}) {
  std::vector<std::string> ov = {"data.mix=" + mix, "trainer.run_dir=" + run.string(),
                                 "trainer.progress=off", "trainer.peak_interval=-1"};
  ov.insert(ov.end(), more.begin(), more.end());
  return train::load_config(std::string(OLMO_SOURCE_DIR) + "/tests/configs/tiny.yaml", ov);
}

std::string bytes(const fs::path& p) { return read_file(p.string()); }

model::ModelConfig small() {
  model::ModelConfig c = model::preset("olmo3-tiny", false);
  c.vocab_size = 512;
  return c;
}

}  // namespace

TEST(HfExport, ExportImportExportIsByteIdentical) {
  Tmp t;
  std::string mix = mix_file(t.dir);
  std::string ckpt;
  std::vector<float> trained;
  {
    train::Trainer tr(tiny(mix, t.dir / "run1", {"trainer.max_steps=2"}));
    tr.train_step();
    tr.train_step();
    ckpt = tr.save_checkpoint();
    trained.assign(tr.model().params(), tr.model().params() + tr.model().num_params());
  }
  auto m1 = train::load_model_for_inference(ckpt);
  const fs::path a = t.dir / "a", b = t.dir / "b", c = t.dir / "c";
  model::export_hf(*m1, a.string());
  model::Olmo3 back = model::load_hf(a.string());
  ASSERT_EQ(back.num_params(), trained.size());
  EXPECT_EQ(0, std::memcmp(back.params(), trained.data(), trained.size() * sizeof(float)));
  {
    train::Trainer tr(tiny(mix, t.dir / "run2", {"trainer.init_from_hf=" + a.string()}));
    EXPECT_EQ(tr.start_kind(), train::StartKind::hf_init);
    model::export_hf(tr.model(), b.string());
    std::string ck2 = tr.save_checkpoint();
    model::export_hf(*train::load_model_for_inference(ck2), c.string());
  }
  for (const char* f : {"model.safetensors", "config.json", "generation_config.json"}) {
    EXPECT_EQ(bytes(a / f), bytes(b / f)) << f << " differs after the trainer import";
    EXPECT_EQ(bytes(a / f), bytes(c / f)) << f << " differs after import + checkpoint";
  }
  EXPECT_FALSE(fs::exists(a / "tokenizer.json"));  // no tokenizer given
}

TEST(HfExport, ShardsWithAnIndexAndLoadsBack) {
  Tmp t;
  model::Olmo3 m(small());
  m.init_weights(4);
  model::HfExportOptions o;
  o.max_shard_bytes = 200000;  // the 512 x 64 embedding alone is 131 KB
  auto files = model::export_hf(m, (t.dir / "s").string(), o);
  nlohmann::json idx = nlohmann::json::parse(bytes(t.dir / "s" / "model.safetensors.index.json"));
  std::set<std::string> shards;
  uint64_t total = 0;
  for (auto& p : m.params_info()) {
    ASSERT_TRUE(idx["weight_map"].contains(p.name)) << p.name;
    shards.insert(idx["weight_map"][p.name].get<std::string>());
    total += p.numel * 4;
  }
  EXPECT_GT(shards.size(), 2u);
  EXPECT_EQ(idx["metadata"]["total_size"].get<uint64_t>(), total);
  EXPECT_TRUE(shards.count("model-00001-of-0000" + std::to_string(shards.size()) + ".safetensors"));
  for (auto& s : shards) EXPECT_LE(file_size((t.dir / "s" / s).string()), 200000u + 4096u);
  EXPECT_FALSE(fs::exists(t.dir / "s" / "model.safetensors"));
  model::Olmo3 back = model::load_hf((t.dir / "s").string());
  EXPECT_EQ(0, std::memcmp(back.params(), m.params(), m.num_params() * sizeof(float)));

  // Re-export as one file over it: refused without overwrite, and no stale shard survives.
  EXPECT_THROW(model::export_hf(m, (t.dir / "s").string()), Error);
  model::HfExportOptions w;
  w.overwrite = true;
  model::export_hf(m, (t.dir / "s").string(), w);
  int n = 0;
  for (auto& e : fs::directory_iterator(t.dir / "s"))
    n += e.path().filename().string().rfind("model", 0) == 0;
  EXPECT_EQ(n, 1);
  model::Olmo3 again = model::load_hf((t.dir / "s").string());
  EXPECT_EQ(0, std::memcmp(again.params(), m.params(), m.num_params() * sizeof(float)));
}

TEST(HfExport, VocabRowsSliceEmbeddingAndHead) {
  Tmp t;
  model::Olmo3 m(small());
  m.init_weights(5);
  model::HfExportOptions o;
  o.vocab_rows = 300;
  model::export_hf(m, (t.dir / "v").string(), o);
  model::Olmo3 back = model::load_hf((t.dir / "v").string());
  EXPECT_EQ(back.config().vocab_size, 300);
  const int64_t D = m.config().d_model;
  EXPECT_EQ(0, std::memcmp(back.params() + back.layout().embed, m.params() + m.layout().embed,
                           size_t(300 * D) * 4));
  EXPECT_EQ(0, std::memcmp(back.params() + back.layout().lm_head, m.params() + m.layout().lm_head,
                           size_t(300 * D) * 4));
  o.vocab_rows = 513;
  EXPECT_THROW(model::export_hf(m, (t.dir / "w").string(), o), Error);
  std::ofstream(t.dir / "file") << "x";
  EXPECT_THROW(model::export_hf(m, (t.dir / "file").string()), Error);
  // A tokenizer with ids beyond the exported rows is refused.
  model::HfTokenizerSpec tok;
  tok.tokens = {"a", "b"};
  tok.specials = {{"<|endoftext|>", 600}};
  tok.pattern = ".";
  model::HfExportOptions ot;
  ot.tokenizer = &tok;
  EXPECT_THROW(model::export_hf(m, (t.dir / "x").string(), ot), Error);
}

TEST(HfExport, TokenizerMergesAreEveryTwoTokenSplitInRankOrder) {
  model::HfTokenizerSpec t;
  // ranks: a b c ab bc abc " " (byte 0x20 -> U+0120 'Ġ' in the ByteLevel alphabet)
  t.tokens = {"a", "b", "c", "ab", "bc", "abc", " ", " a"};
  t.specials = {{"<|endoftext|>", 9}, {"<|pad|>", 8}};
  t.pattern = "\\S+|\\s+";
  t.eos_id = 9;
  t.pad_id = 8;
  nlohmann::json j = nlohmann::json::parse(model::hf_tokenizer_json(t));
  nlohmann::json want = nlohmann::json::array(
      {{"a", "b"}, {"b", "c"}, {"a", "bc"}, {"ab", "c"}, {"\xc4\xa0", "a"}});
  EXPECT_EQ(j["model"]["merges"], want);
  EXPECT_EQ(j["model"]["vocab"]["\xc4\xa0" "a"], 7);
  EXPECT_EQ(j["model"]["ignore_merges"], true);
  EXPECT_EQ(j["added_tokens"][0]["content"], "<|pad|>");  // sorted by id
  EXPECT_EQ(j["added_tokens"][1]["id"], 9);
  nlohmann::json c = nlohmann::json::parse(model::hf_tokenizer_config_json(t, 128));
  EXPECT_EQ(c["eos_token"], "<|endoftext|>");
  EXPECT_EQ(c["pad_token"], "<|pad|>");
  EXPECT_TRUE(c["bos_token"].is_null());
  EXPECT_EQ(c["model_max_length"], 128);
  t.tokens.push_back("a");  // duplicate token bytes
  EXPECT_THROW(model::hf_tokenizer_json(t), Error);
}
