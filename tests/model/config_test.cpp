// ModelConfig presets, parameter counts against the sourced figures (olmo3_spec.md 1.5), and
// HF config.json parsing including every bad-input error.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/error.h"
#include "core/file_io.h"
#include "model/config.h"
#include "model/flops.h"

using namespace olmo::model;

namespace {
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const olmo::Error& e) {
    return e.what();
  }
  return "<no error>";
}

const char* kGood = R"({
  "architectures": ["Olmo3ForCausalLM"], "model_type": "olmo3", "hidden_size": 64,
  "intermediate_size": 96, "num_hidden_layers": 4, "num_attention_heads": 4,
  "num_key_value_heads": 2, "vocab_size": 97, "rms_norm_eps": 1e-06, "sliding_window": 5,
  "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"],
  "max_position_embeddings": 64, "hidden_act": "silu", "attention_bias": false,
  "tie_word_embeddings": false,
  "rope_parameters": {"full_attention": {"rope_theta": 10000.0, "rope_type": "default"},
                      "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"}}
})";

std::string with(const std::string& from, const std::string& to) {
  std::string s = kGood;
  auto p = s.find(from);
  EXPECT_NE(p, std::string::npos) << from;
  return s.replace(p, from.size(), to);
}
}  // namespace

TEST(Presets, CountsMatchSpec) {
  EXPECT_EQ(count_params(preset("olmo3-7b")).total, 7298617344);
  EXPECT_EQ(count_params(preset("olmo3-7b", false)).total, 7298011136);
  EXPECT_EQ(count_params(preset("olmo3-7b")).non_embedding, 6887575552);
  EXPECT_EQ(count_params(preset("olmo3-7b", false)).non_embedding, 6887272448);
  EXPECT_EQ(count_params(preset("olmo3-32b")).total, 32234279936);
  EXPECT_EQ(count_params(preset("olmo3-32b", false)).total, 32233522176);
  EXPECT_EQ(count_params(preset("olmo3-190m")).total, 267424512);
  EXPECT_EQ(count_params(preset("olmo3-190m")).non_embedding, 267424512 - 77070336);
  EXPECT_EQ(count_params(preset("olmo3-1b")).total, 1484916736);
  EXPECT_EQ(count_params(preset("olmo3-7b")).per_layer, 202391552);
}

TEST(Presets, Architecture) {
  ModelConfig c = preset("olmo3-32b");
  EXPECT_EQ(c.n_kv_heads, 8);
  EXPECT_EQ(c.ffn_hidden, 27648);
  EXPECT_EQ(preset("olmo3-7b").ffn_hidden, 11008);
  EXPECT_EQ(preset("olmo3-1b").ffn_hidden, 8192);
  EXPECT_EQ(preset("olmo3-190m").head_dim, 64);
  EXPECT_EQ(preset("olmo3-7b").vocab_size, 100352);
  EXPECT_EQ(preset("olmo3-7b", false).vocab_size, 100278);
  ModelConfig s = preset("olmo3-7b");
  for (int64_t i = 0; i < 32; ++i)
    EXPECT_EQ(s.layer_window[i], (i + 1) % 4 == 0 ? 0 : 4096) << i;
  // Last layer full even when the pattern would make it sliding.
  auto w = olmo3_layer_windows(6);
  EXPECT_EQ(w, (std::vector<int64_t>{4096, 4096, 4096, 0, 4096, 0}));
  EXPECT_FLOAT_EQ(s.norm_eps, 1e-6f);
  EXPECT_EQ(s.rope_theta, 500000);
  for (auto& n : preset_names()) EXPECT_NO_THROW(preset(n)) << n;
}

TEST(Presets, UnknownNamesValidOnes) {
  std::string e = error_of([] { preset("olmo3-8b"); });
  EXPECT_NE(e.find("unknown preset 'olmo3-8b'"), std::string::npos) << e;
  for (auto& n : preset_names()) EXPECT_NE(e.find(n), std::string::npos) << e;
}

TEST(HfConfig, ParsesGood) {
  ModelConfig c = config_from_hf_json_text(kGood, "x/config.json");
  EXPECT_EQ(c.d_model, 64);
  EXPECT_EQ(c.n_heads, 4);
  EXPECT_EQ(c.n_kv_heads, 2);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.ffn_hidden, 96);
  EXPECT_EQ(c.vocab_size, 97);
  EXPECT_EQ(c.rope_theta, 10000.0);
  EXPECT_EQ(c.max_seq_len, 64);
  EXPECT_EQ(c.layer_window, (std::vector<int64_t>{5, 5, 5, 0}));
}

TEST(HfConfig, RoundTripsThroughOurWriter) {
  ModelConfig a = preset("olmo3-tiny");
  ModelConfig b = config_from_hf_json_text(config_to_hf_json(a), "rt");
  EXPECT_EQ(a.d_model, b.d_model);
  EXPECT_EQ(a.n_layers, b.n_layers);
  EXPECT_EQ(a.n_heads, b.n_heads);
  EXPECT_EQ(a.n_kv_heads, b.n_kv_heads);
  EXPECT_EQ(a.head_dim, b.head_dim);
  EXPECT_EQ(a.ffn_hidden, b.ffn_hidden);
  EXPECT_EQ(a.vocab_size, b.vocab_size);
  EXPECT_EQ(a.layer_window, b.layer_window);
  EXPECT_EQ(a.max_seq_len, b.max_seq_len);
  EXPECT_EQ(a.rope_theta, b.rope_theta);
  EXPECT_FLOAT_EQ(a.norm_eps, b.norm_eps);
}

TEST(HfConfig, LegacyRopeThetaAndDefaults) {
  ModelConfig c = config_from_hf_json_text(
      R"({"hidden_size": 32, "intermediate_size": 40, "num_hidden_layers": 8,
          "num_attention_heads": 2, "vocab_size": 10, "rope_theta": 1234.0})", "c.json");
  EXPECT_EQ(c.rope_theta, 1234.0);
  EXPECT_EQ(c.n_kv_heads, 2);
  EXPECT_FLOAT_EQ(c.norm_eps, 1e-5f);  // transformers' Olmo3Config default
  EXPECT_EQ(c.layer_window, (std::vector<int64_t>{4096, 4096, 4096, 0, 4096, 4096, 4096, 0}));
}

TEST(HfConfig, BadInputsNameFileAndField) {
  struct Case {
    std::string text, want;
  };
  std::vector<Case> cases = {
      {with("\"hidden_size\": 64,", ""), "missing required field \"hidden_size\""},
      {with("\"vocab_size\": 97,", ""), "missing required field \"vocab_size\""},
      {with("\"hidden_size\": 64", "\"hidden_size\": 66"),
       "\"hidden_size\" (66) is not divisible by \"num_attention_heads\" (4)"},
      {with("\"num_key_value_heads\": 2", "\"num_key_value_heads\": 3"),
       "\"num_attention_heads\" (4) is not a multiple of \"num_key_value_heads\" (3)"},
      {with("\"sliding_attention\", \"full_attention\"]", "\"full_attention\"]"),
       "\"layer_types\" has 3 entries but \"num_hidden_layers\" is 4"},
      {with("\"full_attention\"]", "\"global\"]"), "\"layer_types\"[3] is \"global\""},
      {with("\"sliding_window\": 5", "\"sliding_window\": null"),
       "layer_types[0] is \"sliding_attention\" but \"sliding_window\" is null"},
      {with("\"hidden_size\": 64", "\"hidden_size\": \"64\""),
       "field \"hidden_size\" must be an integer"},
      {with("\"model_type\": \"olmo3\"", "\"model_type\": \"llama\""),
       "\"model_type\" is \"llama\", expected \"olmo3\""},
      {with("\"hidden_act\": \"silu\"", "\"hidden_act\": \"gelu\""), "only \"silu\""},
      {with("\"tie_word_embeddings\": false", "\"tie_word_embeddings\": true"),
       "tie_word_embeddings"},
      {with("\"rope_theta\": 10000.0, \"rope_type\": \"default\"}}",
            "\"rope_theta\": 10000.0, \"rope_type\": \"linear\"}}"),
       "only \"default\" and \"yarn\" RoPE"},
      {with("\"sliding_attention\": {\"rope_theta\": 10000.0",
            "\"sliding_attention\": {\"rope_theta\": 500000.0"),
       "different rope_theta"},
      {with("\"num_hidden_layers\": 4", "\"num_hidden_layers\": 0"),
       "\"num_hidden_layers\" must be positive"},
      {"{\"hidden_size\": ", "not valid JSON"},
      {"[1, 2]", "top level must be a JSON object"},
  };
  for (auto& c : cases) {
    std::string e = error_of([&] { config_from_hf_json_text(c.text, "dir/config.json"); });
    EXPECT_NE(e.find("dir/config.json: "), std::string::npos) << e;
    EXPECT_NE(e.find(c.want), std::string::npos) << "want: " << c.want << "\ngot: " << e;
  }
}

TEST(HfConfig, MissingFile) {
  std::string e = error_of([] { config_from_hf_json("/nonexistent/dir/config.json"); });
  EXPECT_NE(e.find("/nonexistent/dir/config.json: config.json not found"), std::string::npos)
      << e;
}

TEST(Validate, RejectsInconsistentConfigs) {
  ModelConfig c = preset("olmo3-tiny");
  c.layer_window.pop_back();
  EXPECT_NE(error_of([&] { validate(c, "cfg"); }).find("layer_window has 3 entries"),
            std::string::npos);
  c = preset("olmo3-tiny");
  c.head_dim = 15;
  EXPECT_NE(error_of([&] { validate(c, "cfg"); }).find("head_dim (15) must be even"),
            std::string::npos);
}
