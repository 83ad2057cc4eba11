// HF model directory export: config.json, (sharded) safetensors, generation_config.json and the
// tokenizer files (see hf_export.h; the tokenizer JSON itself is in hf_tokenizer_export.cpp).
#include "interop/hf_export.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cstdio>
#include <filesystem>

#include "core/error.h"
#include "core/file_io.h"
#include "model/safetensors.h"

namespace olmo::model {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json id_or_null(int64_t id) { return id >= 0 ? json(id) : json(nullptr); }

// One safetensors file of a shard plan.
struct Shard {
  std::vector<size_t> tensors;  // indices into the export list
  uint64_t bytes = 0;
};

struct OutTensor {
  std::string name;
  std::vector<int64_t> shape;
  const float* data;
  uint64_t bytes() const {
    uint64_t n = 4;
    for (int64_t s : shape) n *= uint64_t(s);
    return n;
  }
};

}  // namespace

std::string hf_export_config_json(const ModelConfig& c, int64_t vocab_rows,
                                  const HfTokenizerSpec* tok) {
  json j = json::parse(config_to_hf_json(c));
  j["vocab_size"] = vocab_rows;
  // The shortest decimal of the fp32 epsilon (1e-06, not 9.99999997e-07; same float either way).
  char eps[32];
  auto r = std::to_chars(eps, eps + sizeof eps, c.norm_eps);
  j["rms_norm_eps"] = std::stod(std::string(eps, r.ptr));
  if (tok) {
    j["eos_token_id"] = id_or_null(tok->eos_id);
    j["pad_token_id"] = id_or_null(tok->pad_id);
    j["bos_token_id"] = id_or_null(tok->bos_id);
  }
  // YaRN lives in rope_parameters (config_to_hf_json). The released long-context config also
  // has the legacy rope_scaling field, which transformers applies to full-attention layers only:
  // that is the faithful variant, so it is written for it; null otherwise (variant hf gives YaRN
  // to every layer, which only rope_parameters can say).
  json rs = nullptr;
  if (c.yarn.enabled() && c.yarn.variant == YarnVariant::faithful) {
    rs = j["rope_parameters"]["full_attention"];
    rs.erase("rope_theta");
  }
  j["rope_scaling"] = rs;
  return j.dump(2) + "\n";
}

std::string hf_generation_config_json(const HfTokenizerSpec* tok) {
  json j;
  j["_from_model_config"] = false;
  j["bos_token_id"] = tok ? id_or_null(tok->bos_id) : json(nullptr);
  j["eos_token_id"] = tok ? id_or_null(tok->eos_id) : json(nullptr);
  j["pad_token_id"] = tok ? id_or_null(tok->pad_id) : json(nullptr);
  return j.dump(2) + "\n";
}

std::vector<std::string> export_hf(const Olmo3& m, const std::string& dir,
                                   const HfExportOptions& opt) {
  const ModelConfig& c = m.config();
  const int64_t V = c.vocab_size;
  const int64_t rows = opt.vocab_rows > 0 ? opt.vocab_rows : V;
  OLMO_CHECK(rows <= V, dir, ": cannot export ", rows, " vocabulary rows from a model with ",
             V, " (vocab_size)");
  OLMO_CHECK(opt.max_shard_bytes > 0, dir, ": max shard size must be positive");
  if (const HfTokenizerSpec* t = opt.tokenizer) {
    int64_t max_id = int64_t(t->tokens.size()) - 1;
    for (auto& [s, id] : t->specials) max_id = std::max<int64_t>(max_id, id);
    OLMO_CHECK(max_id < rows, dir, ": the tokenizer has ids up to ", max_id,
               " but the exported model has only ", rows, " vocabulary rows");
  }

  std::error_code ec;
  if (fs::exists(dir)) {
    OLMO_CHECK(fs::is_directory(dir), dir, ": output path exists and is not a directory");
    bool empty = fs::directory_iterator(dir) == fs::directory_iterator();
    OLMO_CHECK(empty || opt.overwrite, dir,
               ": output directory is not empty (pass --force to overwrite an export)");
    // Stale weights from an earlier export (another shard count) must not survive.
    for (auto& e : fs::directory_iterator(dir)) {
      std::string n = e.path().filename().string();
      if (n.rfind("model", 0) == 0 && n.find(".safetensors") != std::string::npos)
        fs::remove(e.path());
    }
  }
  fs::create_directories(dir, ec);
  OLMO_CHECK(fs::is_directory(dir), dir, ": cannot create directory: ", ec.message());
  auto path = [&](const std::string& name) { return (fs::path(dir) / name).string(); };
  std::vector<std::string> written;

  // Tensors in HF state-dict order; embed/lm_head sliced to their first `rows` rows.
  std::vector<OutTensor> out;
  for (const ParamInfo& p : m.params_info()) {
    OutTensor t{p.name, p.shape, m.params() + p.offset};
    if (p.offset == m.layout().embed || p.offset == m.layout().lm_head) t.shape[0] = rows;
    out.push_back(std::move(t));
  }
  std::vector<Shard> shards(1);
  for (size_t i = 0; i < out.size(); ++i) {
    uint64_t b = out[i].bytes();
    if (!shards.back().tensors.empty() && shards.back().bytes + b > opt.max_shard_bytes)
      shards.emplace_back();
    shards.back().tensors.push_back(i);
    shards.back().bytes += b;
  }
  const size_t n = shards.size();
  json weight_map = json::object();
  uint64_t total = 0, all_bytes = 0;
  for (auto& sh : shards) all_bytes += sh.bytes;
  ProgressOptions bar_opt;
  bar_opt.mode = opt.progress;
  bar_opt.units = "B";
  ProgressBar bar(int64_t(all_bytes), "export", bar_opt);
  for (size_t s = 0; s < n; ++s) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", s + 1, n);
    std::string file = n == 1 ? "model.safetensors" : name;
    SafetensorsWriter w;
    w.set_metadata("format", "pt");
    for (size_t i : shards[s].tensors) {
      w.add(out[i].name, DType::F32, out[i].shape, out[i].data);
      weight_map[out[i].name] = file;
    }
    w.write(path(file), [&](uint64_t b) { bar.update(int64_t(total + b), file); });
    total += shards[s].bytes;
    written.push_back(file);
  }
  bar.finish();
  if (n > 1) {
    json idx = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
    write_file_atomic(path("model.safetensors.index.json"), idx.dump(2) + "\n");
    written.push_back("model.safetensors.index.json");
  }

  write_file_atomic(path("config.json"), hf_export_config_json(c, rows, opt.tokenizer));
  written.push_back("config.json");
  write_file_atomic(path("generation_config.json"), hf_generation_config_json(opt.tokenizer));
  written.push_back("generation_config.json");
  if (opt.tokenizer) {
    write_file_atomic(path("tokenizer.json"), hf_tokenizer_json(*opt.tokenizer));
    write_file_atomic(path("tokenizer_config.json"),
                      hf_tokenizer_config_json(*opt.tokenizer, c.max_seq_len));
    written.push_back("tokenizer.json");
    written.push_back("tokenizer_config.json");
  }
  fsync_dir(dir);
  return written;
}

}  // namespace olmo::model
