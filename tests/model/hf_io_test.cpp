// HF model directories: save/load round trip (single file and sharded index), bf16 weights, and
// the bad-input errors (missing/unexpected tensor, wrong shape, wrong dtype, missing files).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/file_io.h"
#include "model/hf_io.h"
#include "model/safetensors.h"

using namespace olmo::model;
namespace fs = std::filesystem;

namespace {
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const olmo::Error& e) {
    return e.what();
  }
  return "<no error>";
}

ModelConfig small() {
  ModelConfig c = preset("olmo3-tiny");
  c.d_model = 16, c.n_heads = 2, c.n_kv_heads = 1, c.head_dim = 8, c.ffn_hidden = 24;
  c.vocab_size = 40, c.max_seq_len = 32;
  c.layer_window = {4, 4, 4, 0};
  c.name = "small";
  return c;
}

// Scratch directories under one per-process root, removed at exit.
struct TmpRoot {
  std::string path = (fs::temp_directory_path() / ("olmo_hfio_" + std::to_string(::getpid()))).string();
  ~TmpRoot() { fs::remove_all(path); }
};
std::string fresh(const std::string& name) {
  static TmpRoot root;
  std::string d = root.path + "/" + name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Writes config.json and model.safetensors from `m`, letting `edit` change what is written.
void write_dir(const Olmo3& m, const std::string& dir,
               const std::function<void(SafetensorsWriter&, const ParamInfo&)>& each) {
  olmo::write_file_atomic(dir + "/config.json", config_to_hf_json(m.config()));
  SafetensorsWriter w;
  for (const ParamInfo& p : m.params_info()) each(w, p);
  w.write(dir + "/model.safetensors");
}
}  // namespace

TEST(HfIo, SaveLoadRoundTrip) {
  Olmo3 m(small());
  m.init_weights(7);
  std::string d = fresh("rt");
  save_hf(m, d);
  Olmo3 r = load_hf(d);
  ASSERT_EQ(r.num_params(), m.num_params());
  EXPECT_EQ(std::memcmp(r.params(), m.params(), m.num_params() * 4), 0);
  EXPECT_EQ(r.config().layer_window, m.config().layer_window);
  EXPECT_EQ(r.config().n_kv_heads, 1);
}

TEST(HfIo, ShardedIndexAndBf16) {
  Olmo3 m(small());
  m.init_weights(3);
  // Round the weights to bf16 so a bf16 copy converts back exactly.
  std::vector<uint16_t> bf(m.num_params());
  for (size_t i = 0; i < m.num_params(); ++i) {
    uint32_t b;
    std::memcpy(&b, m.params() + i, 4);
    bf[i] = uint16_t(b >> 16);
    m.params()[i] = bf16_to_float(bf[i]);
  }
  std::string d = fresh("shard");
  olmo::write_file_atomic(d + "/config.json", config_to_hf_json(m.config()));
  SafetensorsWriter w1, w2;
  std::string map;
  const auto& info = m.params_info();
  for (size_t i = 0; i < info.size(); ++i) {
    bool first = i < info.size() / 2;
    (first ? w1 : w2).add(info[i].name, DType::BF16, info[i].shape, bf.data() + info[i].offset);
    if (!map.empty()) map += ',';
    map += '"';
    map += info[i].name;
    map += first ? "\":\"a.safetensors\"" : "\":\"b.safetensors\"";
  }
  w1.write(d + "/a.safetensors");
  w2.write(d + "/b.safetensors");
  olmo::write_file_atomic(d + "/model.safetensors.index.json",
                          "{\"metadata\":{},\"weight_map\":{" + map + "}}");
  Olmo3 r = load_hf(d);
  EXPECT_EQ(std::memcmp(r.params(), m.params(), m.num_params() * 4), 0);
  // Index naming a shard that lacks the tensor.
  std::string bad = map;
  auto p = bad.find("a.safetensors");
  bad.replace(p, 13, "b.safetensors");
  olmo::write_file_atomic(d + "/model.safetensors.index.json",
                          "{\"weight_map\":{" + bad + "}}");
  std::string e = error_of([&] { load_hf(d); });
  EXPECT_NE(e.find(d + "/b.safetensors: tensor 'model.embed_tokens.weight' not found"),
            std::string::npos) << e;
  olmo::write_file_atomic(d + "/model.safetensors.index.json", "{\"metadata\":{}}");
  e = error_of([&] { load_hf(d); });
  EXPECT_NE(e.find("model.safetensors.index.json: missing object field \"weight_map\""),
            std::string::npos) << e;
}

TEST(HfIo, BadDirectories) {
  Olmo3 m(small());
  std::string d = fresh("bad");
  const std::string file = d + "/model.safetensors";
  auto copy = [&](SafetensorsWriter& w, const ParamInfo& p) {
    w.add(p.name, DType::F32, p.shape, m.params() + p.offset);
  };
  // Missing tensor.
  write_dir(m, d, [&](SafetensorsWriter& w, const ParamInfo& p) {
    if (p.name != "model.layers.2.mlp.up_proj.weight") copy(w, p);
  });
  std::string e = error_of([&] { load_hf(d); });
  EXPECT_NE(e.find(file + ": tensor 'model.layers.2.mlp.up_proj.weight' not found"),
            std::string::npos) << e;
  // Wrong shape.
  write_dir(m, d, [&](SafetensorsWriter& w, const ParamInfo& p) {
    if (p.name == "model.layers.0.self_attn.k_proj.weight")
      w.add(p.name, DType::F32, {p.shape[1], p.shape[0]}, m.params() + p.offset);
    else
      copy(w, p);
  });
  e = error_of([&] { load_hf(d); });
  EXPECT_NE(e.find(file + ": tensor 'model.layers.0.self_attn.k_proj.weight' has shape [16, 8] "
                   "but the config implies [8, 16]"),
            std::string::npos) << e;
  // Wrong dtype.
  std::vector<int32_t> ints(16, 1);
  write_dir(m, d, [&](SafetensorsWriter& w, const ParamInfo& p) {
    if (p.name == "model.norm.weight")
      w.add(p.name, DType::I32, p.shape, ints.data());
    else
      copy(w, p);
  });
  e = error_of([&] { load_hf(d); });
  EXPECT_NE(e.find(file + ": tensor 'model.norm.weight' has dtype I32"), std::string::npos) << e;
  // Unexpected tensor.
  std::vector<float> extra(4);
  write_dir(m, d, [&](SafetensorsWriter& w, const ParamInfo& p) {
    copy(w, p);
    if (p.name == "lm_head.weight") w.add("model.rotary.inv_freq", DType::F32, {4}, extra.data());
  });
  e = error_of([&] { load_hf(d); });
  EXPECT_NE(e.find(file + ": unexpected tensor 'model.rotary.inv_freq'"), std::string::npos) << e;
  // Contradictory config.json.
  olmo::write_file_atomic(d + "/config.json",
                          R"({"hidden_size": 16, "intermediate_size": 24, "num_hidden_layers": 4,
                              "num_attention_heads": 3, "vocab_size": 40})");
  e = error_of([&] { load_hf(d); });
  EXPECT_NE(e.find(d + "/config.json: field \"hidden_size\" (16) is not divisible"),
            std::string::npos) << e;
  // Truncated weights file.
  write_dir(m, d, copy);
  std::string raw = olmo::read_file(file);
  olmo::write_file_atomic(file, raw.substr(0, raw.size() - 10));
  e = error_of([&] { load_hf(d); });
  EXPECT_NE(e.find(file + ": tensor 'lm_head.weight': data_offsets"), std::string::npos) << e;
  // No weights, no config, no directory.
  fs::remove(file);
  e = error_of([&] { load_hf(d); });
  EXPECT_NE(e.find("no model.safetensors or model.safetensors.index.json"), std::string::npos) << e;
  fs::remove(d + "/config.json");
  e = error_of([&] { load_hf(d); });
  EXPECT_NE(e.find(d + "/config.json: config.json not found"), std::string::npos) << e;
  e = error_of([&] { load_hf(d + "/nope"); });
  EXPECT_NE(e.find("model directory not found"), std::string::npos) << e;
}
