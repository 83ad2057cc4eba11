// HF model directory load/save (see hf_io.h).
#include "model/hf_io.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include "core/error.h"
#include "core/file_io.h"
#include "model/safetensors.h"

namespace olmo::model {

namespace fs = std::filesystem;

namespace {
std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}
}  // namespace

void load_hf_weights(Olmo3& m, const std::string& dir) {
  const std::string single = (fs::path(dir) / "model.safetensors").string();
  const std::string index = (fs::path(dir) / "model.safetensors.index.json").string();
  // tensor name -> shard path
  std::map<std::string, std::string> where;
  std::vector<std::string> files;
  if (file_exists(index)) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(read_file(index));
    } catch (const nlohmann::json::exception& e) {  // also out_of_range (1e99999)
      throw Error(cat(index, ": not valid JSON: ", e.what()));
    }
    OLMO_CHECK(j.is_object() && j.contains("weight_map") && j["weight_map"].is_object(), index,
               ": missing object field \"weight_map\"");
    std::set<std::string> seen;
    for (auto& [name, f] : j["weight_map"].items()) {
      OLMO_CHECK(f.is_string(), index, ": weight_map[\"", name, "\"] is not a file name");
      std::string p = (fs::path(dir) / f.get<std::string>()).string();
      where[name] = p;
      if (seen.insert(p).second) files.push_back(p);
    }
  } else {
    OLMO_CHECK(file_exists(single), dir,
               ": no model.safetensors or model.safetensors.index.json in the model directory");
    files.push_back(single);
  }
  std::map<std::string, std::unique_ptr<SafetensorsFile>> open;
  for (auto& f : files) open[f] = std::make_unique<SafetensorsFile>(f);
  if (where.empty())
    for (auto& [name, t] : open[single]->tensors()) where[name] = single;

  std::set<std::string> expected;
  float* P = m.params();
  for (const ParamInfo& p : m.params_info()) {
    expected.insert(p.name);
    auto it = where.find(p.name);
    OLMO_CHECK(it != where.end(), files.size() == 1 ? files[0] : index, ": tensor '", p.name,
               "' not found (model needs it: shape ", shape_str(p.shape), ")");
    const SafetensorsFile& sf = *open[it->second];
    const TensorView& t = sf.get(p.name);
    OLMO_CHECK(t.shape == p.shape, sf.path(), ": tensor '", p.name, "' has shape ",
               shape_str(t.shape), " but the config implies ", shape_str(p.shape));
    sf.read_f32(p.name, P + p.offset);
  }
  for (auto& [f, sf] : open)
    for (auto& [name, t] : sf->tensors())
      OLMO_CHECK(expected.count(name), f, ": unexpected tensor '", name,
                 "' (not part of an OLMo 3 model with this config)");
  for (auto& [name, f] : where)
    OLMO_CHECK(open[f]->has(name), f, ": tensor '", name, "' listed in ", index,
               " is not in the file");
}

Olmo3 load_hf(const std::string& dir) {
  OLMO_CHECK(fs::is_directory(dir), dir, ": model directory not found");
  ModelConfig c = config_from_hf_json((fs::path(dir) / "config.json").string());
  c.name = dir;
  Olmo3 m(c);
  load_hf_weights(m, dir);
  return m;
}

void save_hf(const Olmo3& m, const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  OLMO_CHECK(fs::is_directory(dir), dir, ": cannot create directory: ", ec.message());
  write_file_atomic((fs::path(dir) / "config.json").string(), config_to_hf_json(m.config()));
  SafetensorsWriter w;
  w.set_metadata("format", "pt");
  for (const ParamInfo& p : m.params_info())
    w.add(p.name, DType::F32, p.shape, m.params() + p.offset);
  w.write((fs::path(dir) / "model.safetensors").string());
}

}  // namespace olmo::model
