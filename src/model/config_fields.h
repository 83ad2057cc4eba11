// The one description of ModelConfig: every field with its name, doc string and the formats
// that carry it as is, in one list (describe_model_fields). Every reader and writer of a model
// configuration walks it: the checkpoint's "model" section and `olmo info` (config_json.cpp),
// the trainer config's `model.<name>` keys (YAML loading, key=value overrides, printing, the
// generated docs/config.md, and the reverse model_overrides(), train/), and the plain fields
// of HF config.json (config.cpp). A field added to ModelConfig and to this list is carried by
// all of them; tests/train/model_config_roundtrip_test.cpp perturbs each listed field and
// checks that every format keeps it (and fails on a field missing from its table).
//
// describe_model_fields(v) calls v(name, get, doc, use) for every field, in print order; `get`
// maps a (const) ModelConfig& to the member's reference, so one visitor can read one config and
// write another. visit_model_fields(c, v) calls v(name, member, doc, use) on one config.
// Member types: std::string, int64_t, double, float, std::vector<int64_t>, YarnVariant,
// Precision.
#pragma once
#include "model/config.h"

namespace olmo::model {

// Where a field travels as is (every field is in the checkpoint's model section and `olmo info`).
struct FieldUse {
  // The top-level key of HF config.json holding the value unchanged; nullptr when config.json
  // has no such key (name, precision) or spells it otherwise (layer_types, rope_parameters),
  // which config_to_hf_json / config_from_hf_json_text write and read by hand.
  const char* hf = nullptr;
  // A `model.<name>` key of the trainer config, unset (0 / empty / the first choice) = the
  // preset's value. false: its trainer-config form is elsewhere (name: the run's `name`;
  // layer_window: model.window_pattern / force_full_*; max_seq_len: data.seq_len; precision:
  // model.precision, which also takes `auto`).
  bool yaml = true;
};

template <class V>
void describe_model_fields(V&& v) {
  // clang-format off
  v("name", [](auto& c) -> auto& { return c.name; },
    "model name (the preset, the run name or the file it came from)", FieldUse{nullptr, false});
  v("d_model", [](auto& c) -> auto& { return c.d_model; },
    "width of the residual stream (OLMo-core d_model)", FieldUse{"hidden_size"});
  v("n_layers", [](auto& c) -> auto& { return c.n_layers; },
    "transformer blocks (OLMo-core n_layers)", FieldUse{"num_hidden_layers"});
  v("n_heads", [](auto& c) -> auto& { return c.n_heads; },
    "query heads (OLMo-core n_heads)", FieldUse{"num_attention_heads"});
  v("n_kv_heads", [](auto& c) -> auto& { return c.n_kv_heads; },
    "key/value heads, GQA when < n_heads (OLMo-core n_kv_heads; a custom size: n_heads)",
    FieldUse{"num_key_value_heads"});
  v("head_dim", [](auto& c) -> auto& { return c.head_dim; },
    "width of one head (a custom size: d_model / n_heads)", FieldUse{"head_dim"});
  v("ffn_hidden", [](auto& c) -> auto& { return c.ffn_hidden; },
    "SwiGLU hidden width (OLMo-core FeedForward hidden_size; a custom size: llama_like)",
    FieldUse{"intermediate_size"});
  v("vocab_size", [](auto& c) -> auto& { return c.vocab_size; },
    "embedding and lm_head rows (padded vocabulary; OLMo-core pads to 128)",
    FieldUse{"vocab_size"});
  v("rope_theta", [](auto& c) -> auto& { return c.rope_theta; },
    "RoPE base (OLMo-core RoPEConfig.theta)", FieldUse{});
  v("norm_eps", [](auto& c) -> auto& { return c.norm_eps; },
    "RMSNorm epsilon, fp32 (OLMo-core LayerNormConfig.eps)", FieldUse{"rms_norm_eps"});
  v("layer_window", [](auto& c) -> auto& { return c.layer_window; },
    "per layer: sliding window in keys, 0 = full causal", FieldUse{nullptr, false});
  v("max_seq_len", [](auto& c) -> auto& { return c.max_seq_len; },
    "RoPE table length / longest sequence", FieldUse{"max_position_embeddings", false});
  v("yarn_factor", [](auto& c) -> auto& { return c.yarn.factor; },
    "YaRN RoPE scaling factor (OLMo-core YaRNRoPEScalingConfig.factor; 0 = no YaRN)",
    FieldUse{});
  v("yarn_beta_fast", [](auto& c) -> auto& { return c.yarn.beta_fast; },
    "YaRN beta_fast (OLMo-core YaRNRoPEScalingConfig.beta_fast)", FieldUse{});
  v("yarn_beta_slow", [](auto& c) -> auto& { return c.yarn.beta_slow; },
    "YaRN beta_slow (OLMo-core YaRNRoPEScalingConfig.beta_slow)", FieldUse{});
  v("yarn_old_context_len", [](auto& c) -> auto& { return c.yarn.old_context_len; },
    "YaRN: the context length trained before (OLMo-core old_context_len)", FieldUse{});
  v("yarn_attention_factor", [](auto& c) -> auto& { return c.yarn.attention_factor; },
    "YaRN attention factor (OLMo-core attention_factor; 0 = 0.1 ln(factor) + 1)", FieldUse{});
  v("yarn_variant", [](auto& c) -> auto& { return c.yarn.variant; },
    "faithful (full-attention layers, as OLMo-core) | hf (all layers)", FieldUse{});
  v("precision", [](auto& c) -> auto& { return c.precision; },
    "matmul precision: fp32 | bf16_mixed (fp32 master weights either way)",
    FieldUse{nullptr, false});
  // clang-format on
}

template <class C, class V>
void visit_model_fields(C& c, V&& v) {
  describe_model_fields([&](const char* name, auto get, const char* doc, FieldUse use) {
    v(name, get(c), doc, use);
  });
}

// A ModelConfig whose every described field is unset (value-initialized: 0, empty, the first
// enumerator): the trainer config's model section before any `model.<name>` key is read.
inline ModelConfig unset_model_config() {
  ModelConfig c;
  visit_model_fields(c, [](const char*, auto& member, const char*, FieldUse) { member = {}; });
  return c;
}

}  // namespace olmo::model
