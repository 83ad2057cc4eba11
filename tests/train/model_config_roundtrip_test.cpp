// Every field of the one ModelConfig description (model/config_fields.h) survives every format
// that carries a model configuration: the checkpoint's "model" section (written and read back
// through a real checkpoint directory), the HF config.json writer/reader, `olmo info`'s text and
// the YAML `model:` keys (model_overrides -> load_config -> model_config). Each field is
// perturbed on its own from a YaRN base config; the test fails when a listed field is dropped by
// any format, and when the description lists a field that has no perturbation here (so a new
// field must be added to this table, and with it to every format). This is the test that the
// YaRN-less checkpoint section (issue 17) would have failed.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <type_traits>

#include "ckpt/checkpoint.h"
#include "core/error.h"
#include "model/config.h"
#include "model/config_fields.h"
#include "model/config_json.h"
#include "train/config.h"
#include "train/model_setup.h"

using namespace olmo;
using model::ModelConfig;
using nlohmann::json;

namespace {

ModelConfig base() {
  ModelConfig c;
  c.name = "roundtrip";
  c.d_model = 64, c.n_layers = 4, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 16;
  c.ffn_hidden = 128, c.vocab_size = 512, c.rope_theta = 500000, c.norm_eps = 1e-6f;
  c.layer_window = {16, 16, 16, 0};
  c.max_seq_len = 128;
  c.yarn.factor = 4, c.yarn.beta_fast = 32, c.yarn.beta_slow = 1, c.yarn.old_context_len = 32;
  c.yarn.attention_factor = 0, c.yarn.variant = model::YarnVariant::faithful;
  c.precision = model::Precision::fp32;
  return c;
}

// One valid perturbation per field (co-changes only where validity needs them).
const std::map<std::string, std::function<void(ModelConfig&)>>& perturbations() {
  static const std::map<std::string, std::function<void(ModelConfig&)>> p = {
      {"name", [](ModelConfig& c) { c.name = "renamed"; }},
      {"d_model", [](ModelConfig& c) { c.d_model = 96; }},
      {"n_layers", [](ModelConfig& c) { c.n_layers = 5, c.layer_window = {16, 16, 16, 0, 0}; }},
      {"n_heads", [](ModelConfig& c) { c.n_heads = 8; }},
      {"n_kv_heads", [](ModelConfig& c) { c.n_kv_heads = 4; }},
      {"head_dim", [](ModelConfig& c) { c.head_dim = 32; }},
      {"ffn_hidden", [](ModelConfig& c) { c.ffn_hidden = 160; }},
      {"vocab_size", [](ModelConfig& c) { c.vocab_size = 640; }},
      {"rope_theta", [](ModelConfig& c) { c.rope_theta = 10000; }},
      {"norm_eps", [](ModelConfig& c) { c.norm_eps = 1e-5f; }},
      {"layer_window", [](ModelConfig& c) { c.layer_window = {8, 0, 8, 0}; }},
      {"max_seq_len", [](ModelConfig& c) { c.max_seq_len = 256; }},
      {"yarn_factor", [](ModelConfig& c) { c.yarn.factor = 8; }},
      {"yarn_beta_fast", [](ModelConfig& c) { c.yarn.beta_fast = 16; }},
      {"yarn_beta_slow", [](ModelConfig& c) { c.yarn.beta_slow = 2; }},
      {"yarn_old_context_len", [](ModelConfig& c) { c.yarn.old_context_len = 64; }},
      {"yarn_attention_factor", [](ModelConfig& c) { c.yarn.attention_factor = 1.25; }},
      {"yarn_variant", [](ModelConfig& c) { c.yarn.variant = model::YarnVariant::hf; }},
      {"precision", [](ModelConfig& c) { c.precision = model::Precision::bf16_mixed; }},
  };
  return p;
}

// Fields a format does not carry by design (HF config.json has no run name or precision).
const std::set<std::string> kNotInHf = {"name", "precision"};

json as_json(const ModelConfig& c) { return model::model_config_to_json(c); }

// The fields whose members differ, compared member by member through the description (not
// through a format, so a format that drops a field cannot hide it here).
std::set<std::string> diff(const ModelConfig& a, const ModelConfig& b) {
  std::vector<std::pair<std::string, std::string>> x, y;
  auto collect = [](std::vector<std::pair<std::string, std::string>>& out) {
    return [&out](const char* name, const auto& member, const char*, model::FieldUse) {
      std::ostringstream o;
      o.precision(17);
      using T = std::decay_t<decltype(member)>;
      if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
        for (int64_t v : member) o << v << ",";
      } else if constexpr (std::is_enum_v<T>) {
        o << int(member);
      } else {
        o << member;
      }
      out.push_back({name, o.str()});
    };
  };
  model::visit_model_fields(a, collect(x));
  model::visit_model_fields(b, collect(y));
  std::set<std::string> d;
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i].second != y[i].second) d.insert(x[i].first);
  return d;
}

ModelConfig via_checkpoint(const ModelConfig& c, const std::string& root) {
  std::filesystem::remove_all(root);
  {
    ckpt::CheckpointWriter w(root, 1);
    const float one = 1;
    w.add_tensor("x", &one, {1});
    w.add_json("model", as_json(c));
    w.commit();
  }
  ckpt::CheckpointReader r(root + "/step1");
  return model::model_config_from_json(r.json("model"), r.dir());
}

ModelConfig via_hf(const ModelConfig& c) {
  ModelConfig r = model::config_from_hf_json_text(model::config_to_hf_json(c), "config.json");
  for (const std::string& k : kNotInHf) {  // not carried: copy them over, compared elsewhere
    if (k == "name") r.name = c.name;
    if (k == "precision") r.precision = c.precision;
  }
  // The writer spells out the default attention factor (0 -> 0.1 ln(factor) + 1): same model.
  if (r.yarn.enabled() && c.yarn.attention_factor == 0 &&
      r.yarn.attention_factor == c.yarn.effective_attention_factor())
    r.yarn.attention_factor = 0;
  return r;
}

ModelConfig via_yaml(const ModelConfig& c) {
  const std::string dir = testing::TempDir() + "/model_rt_yaml";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/c.yaml";
  FILE* f = std::fopen(path.c_str(), "w");
  std::fputs("name: x\nmodel:\n  preset: olmo3-7b\ndata:\n  seq_len: 64\n", f);
  std::fclose(f);
  train::Config cfg = train::load_config(path, train::model_overrides(c));
  return train::model_config(cfg);
}

ModelConfig via_text(const ModelConfig& c) {
  // `olmo info` prints "name: <json value>" per field: parse it back line by line.
  json j = json::object();
  const std::string t = model::model_config_text(c, "");
  size_t at = 0;
  while (at < t.size()) {
    const size_t nl = t.find('\n', at), colon = t.find(": ", at);
    j[t.substr(at, colon - at)] = json::parse(t.substr(colon + 2, nl - colon - 2));
    at = nl + 1;
  }
  return model::model_config_from_json(j, "olmo info text");
}

class ModelConfigRoundTrip : public ::testing::Test {
 protected:
  void SetUp() override { setenv("OLMO_BF16", "emulate", 1); }  // bf16_mixed on any CPU
};

}  // namespace

TEST_F(ModelConfigRoundTrip, EveryDescribedFieldHasAPerturbation) {
  std::set<std::string> listed;
  for (const std::string& n : model::model_config_field_names()) listed.insert(n);
  std::set<std::string> perturbed;
  for (const auto& [n, f] : perturbations()) perturbed.insert(n);
  EXPECT_EQ(listed, perturbed) << "model/config_fields.h and this test's table disagree";
  for (const auto& [n, f] : perturbations()) {
    ModelConfig c = base();
    f(c);
    model::validate(c, n);
    EXPECT_TRUE(diff(base(), c).count(n)) << "perturbation of '" << n << "' changes nothing";
  }
}

TEST_F(ModelConfigRoundTrip, EveryFieldSurvivesEveryFormat) {
  const std::string root = testing::TempDir() + "/model_rt_ckpt";
  std::vector<std::pair<std::string, ModelConfig>> cases = {{"base", base()}};
  for (const auto& [n, f] : perturbations()) {
    ModelConfig c = base();
    f(c);
    cases.push_back({n, c});
  }
  ModelConfig no_yarn = base();
  no_yarn.yarn = model::RopeScaling{};
  cases.push_back({"no YaRN", no_yarn});
  for (const auto& [n, c] : cases) {
    SCOPED_TRACE("perturbed field: " + n);
    EXPECT_EQ(diff(c, model::model_config_from_json(as_json(c), "json")), std::set<std::string>{});
    EXPECT_EQ(diff(c, via_checkpoint(c, root)), std::set<std::string>{});
    EXPECT_EQ(diff(c, via_hf(c)), std::set<std::string>{});
    EXPECT_EQ(diff(c, via_text(c)), std::set<std::string>{});
    EXPECT_EQ(diff(c, via_yaml(c)), std::set<std::string>{});
  }
}

TEST_F(ModelConfigRoundTrip, CheckpointSectionErrorsNameTheField) {
  json j = as_json(base());
  j.erase("yarn_factor");
  try {
    model::model_config_from_json(j, "ckpt/state.json");
    FAIL() << "a model section without yarn_factor was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("yarn_factor"), std::string::npos) << e.what();
  }
  j = as_json(base());
  j["extra"] = 1;
  EXPECT_THROW(model::model_config_from_json(j, "x"), Error);
  j = as_json(base());
  j["yarn_variant"] = "sideways";
  EXPECT_THROW(model::model_config_from_json(j, "x"), Error);
}
