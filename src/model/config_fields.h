// The one description of ModelConfig: every field with its name and doc string, in one visitor.
// Every reader and writer of a model configuration walks it (the checkpoint's "model" section,
// `olmo info`, the YAML `model:` keys' round-trip test, the HF config.json round-trip test), so a
// field added to ModelConfig and to this list is carried everywhere, and a field missing here is
// caught by tests/model/config_fields_test.cpp (it perturbs each listed field and checks that
// every format keeps it).
//
// visit_model_fields(c, v) calls v(name, member, doc) for every field, in print order. Member
// types: std::string, int64_t, double, float, std::vector<int64_t>, YarnVariant, Precision.
#pragma once
#include "model/config.h"

namespace olmo::model {

template <class C, class V>
void visit_model_fields(C& c, V&& v) {
  v("name", c.name, "model name (the preset, the run name or the file it came from)");
  v("d_model", c.d_model, "width of the residual stream");
  v("n_layers", c.n_layers, "transformer blocks");
  v("n_heads", c.n_heads, "query heads");
  v("n_kv_heads", c.n_kv_heads, "key/value heads (GQA when < n_heads)");
  v("head_dim", c.head_dim, "width of one head");
  v("ffn_hidden", c.ffn_hidden, "SwiGLU hidden width");
  v("vocab_size", c.vocab_size, "embedding and lm_head rows (padded vocabulary)");
  v("rope_theta", c.rope_theta, "RoPE base");
  v("norm_eps", c.norm_eps, "RMSNorm epsilon (fp32)");
  v("layer_window", c.layer_window, "per layer: sliding window in keys, 0 = full causal");
  v("max_seq_len", c.max_seq_len, "RoPE table length / longest sequence");
  v("yarn_factor", c.yarn.factor, "YaRN context extension factor, 0 = no YaRN");
  v("yarn_beta_fast", c.yarn.beta_fast, "YaRN beta_fast");
  v("yarn_beta_slow", c.yarn.beta_slow, "YaRN beta_slow");
  v("yarn_old_context_len", c.yarn.old_context_len, "YaRN: the context length trained before");
  v("yarn_attention_factor", c.yarn.attention_factor, "YaRN attention factor, 0 = 0.1 ln(factor) + 1");
  v("yarn_variant", c.yarn.variant, "faithful (full-attention layers, as OLMo-core) | hf (all layers)");
  v("precision", c.precision, "matmul precision: fp32 | bf16_mixed (fp32 master weights either way)");
}

}  // namespace olmo::model
