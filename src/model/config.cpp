// Presets, validation and HF config.json parsing for ModelConfig (see config.h).
#include "model/config.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <functional>
#include <map>
#include <type_traits>

#include "core/error.h"
#include "core/file_io.h"
#include "model/config_fields.h"

namespace olmo::model {

void validate(const ModelConfig& c, const std::string& where) {
  auto pos = [&](int64_t v, const char* what) {
    OLMO_CHECK(v > 0, where, ": ", what, " must be positive, got ", v);
  };
  pos(c.d_model, "d_model");
  pos(c.n_layers, "n_layers");
  pos(c.n_heads, "n_heads");
  pos(c.n_kv_heads, "n_kv_heads");
  pos(c.head_dim, "head_dim");
  pos(c.ffn_hidden, "ffn_hidden");
  pos(c.vocab_size, "vocab_size");
  pos(c.max_seq_len, "max_seq_len");
  OLMO_CHECK(c.n_heads % c.n_kv_heads == 0, where, ": n_heads (", c.n_heads,
             ") is not a multiple of n_kv_heads (", c.n_kv_heads, ")");
  OLMO_CHECK(c.head_dim % 2 == 0, where, ": head_dim (", c.head_dim, ") must be even for RoPE");
  OLMO_CHECK(c.rope_theta > 0, where, ": rope_theta must be positive, got ", c.rope_theta);
  OLMO_CHECK(c.norm_eps > 0, where, ": norm_eps must be positive, got ", c.norm_eps);
  OLMO_CHECK(int64_t(c.layer_window.size()) == c.n_layers, where, ": layer_window has ",
             c.layer_window.size(), " entries but n_layers is ", c.n_layers);
  for (size_t i = 0; i < c.layer_window.size(); ++i)
    OLMO_CHECK(c.layer_window[i] >= 0, where, ": layer_window[", i, "] is negative (",
               c.layer_window[i], ")");
  if (c.yarn.enabled()) {
    const RopeScaling& y = c.yarn;
    OLMO_CHECK(y.factor > 1, where, ": YaRN factor must be > 1 (it extends the context by that "
               "factor), got ", y.factor);
    OLMO_CHECK(y.old_context_len > 0, where, ": YaRN old context length must be positive, got ",
               y.old_context_len);
    OLMO_CHECK(y.old_context_len <= c.max_seq_len, where, ": YaRN old context length ",
               y.old_context_len, " is larger than the sequence length ", c.max_seq_len,
               " (YaRN extends a shorter trained context to a longer one)");
    OLMO_CHECK(y.beta_slow > 0 && y.beta_fast > y.beta_slow, where,
               ": YaRN needs beta_fast > beta_slow > 0, got beta_fast ", y.beta_fast,
               ", beta_slow ", y.beta_slow);
    OLMO_CHECK(y.attention_factor >= 0, where, ": YaRN attention_factor must be >= 0 (0 = "
               "0.1 ln(factor) + 1), got ", y.attention_factor);
  }
  validate(c.act_ckpt, where);
}

kernels::YarnParams RopeScaling::params() const {
  return {factor, beta_fast, beta_slow, old_context_len, attention_factor};
}

kernels::YarnFormula RopeScaling::formula() const {
  return variant == YarnVariant::hf ? kernels::YarnFormula::hf : kernels::YarnFormula::olmo_core;
}

double RopeScaling::effective_attention_factor() const {
  return kernels::yarn_attention_factor(params());
}

const char* yarn_variant_name(YarnVariant v) { return kYarnVariantNames[int(v)]; }

const char* ac_mode_name(AcMode m) { return kAcModeNames[int(m)]; }

AcMode parse_ac_mode(const std::string& s, const std::string& where) {
  for (int i = 0; i < 4; ++i)
    if (s == kAcModeNames[i]) return AcMode(i);
  throw Error(cat(where, ": activation checkpointing mode '", s,
                  "' must be none, full, selected_blocks or budget"));
}

void validate(const ActCheckpointing& a, const std::string& where) {
  if (a.mode == AcMode::selected_blocks)
    OLMO_CHECK(a.block_interval >= 1, where, ": activation checkpointing selected_blocks needs "
               "block_interval >= 1 (block i is checkpointed when i % block_interval == 0), got ",
               a.block_interval);
  if (a.mode == AcMode::budget)
    OLMO_CHECK(a.budget >= 0 && a.budget <= 1, where, ": activation checkpointing budget must "
               "be in [0, 1] (0 = recompute every block, 1 = none), got ", a.budget);
}

YarnVariant parse_yarn_variant(const std::string& s, const std::string& where) {
  for (int i = 0; i < 2; ++i)
    if (s == kYarnVariantNames[i]) return YarnVariant(i);
  throw Error(cat(where, ": YaRN variant '", s, "' must be 'faithful' (full-attention layers "
                  "only, as OLMo-core trained OLMo 3) or 'hf' (every layer)"));
}

std::vector<int64_t> olmo3_layer_windows(int64_t n_layers, int64_t w) {
  std::vector<int64_t> v(n_layers);
  for (int64_t i = 0; i < n_layers; ++i)
    v[i] = ((i + 1) % 4 != 0 && i != n_layers - 1) ? w : 0;
  return v;
}

namespace {

// OLMo-core TransformerConfig.llama_like FFN size: int(8d/3), times multiplier (int again),
// rounded up to a multiple of `multiple_of`.
int64_t llama_ffn(int64_t d, double multiplier, int64_t multiple_of) {
  int64_t h = int64_t(8.0 * double(d) / 3.0);
  h = int64_t(multiplier * double(h));
  return multiple_of * ((h + multiple_of - 1) / multiple_of);
}

ModelConfig llama_like(const std::string& name, int64_t d, int64_t layers, int64_t heads,
                       int64_t kv_heads, double multiplier, int64_t multiple_of = 256) {
  ModelConfig c;
  c.name = name;
  c.d_model = d;
  c.n_layers = layers;
  c.n_heads = heads;
  c.n_kv_heads = kv_heads;
  c.head_dim = d / heads;
  c.ffn_hidden = llama_ffn(d, multiplier, multiple_of);
  c.vocab_size = kVocabPadded;
  c.layer_window = olmo3_layer_windows(layers);
  c.max_seq_len = 8192;
  return c;
}

using Maker = std::function<ModelConfig()>;

const std::vector<std::pair<std::string, Maker>>& registry() {
  static const std::vector<std::pair<std::string, Maker>> r = {
      // OLMo-core olmo3_7B = olmo2_7B (llama2_7B + reordered norm, QK-norm) + SWA.
      {"olmo3-7b", [] { return llama_like("olmo3-7b", 4096, 32, 32, 32, 1.0); }},
      // olmo3_32B: 40 heads / 8 kv heads, FFN 27648 (multiplier 27648/(8*5120/3), multiple 512).
      {"olmo3-32b",
       [] { return llama_like("olmo3-32b", 5120, 64, 40, 8, 27648.0 / (8.0 * 5120 / 3.0), 512); }},
      {"olmo3-1b", [] { return llama_like("olmo3-1b", 2048, 16, 16, 16, 1.5); }},
      {"olmo3-190m", [] { return llama_like("olmo3-190m", 768, 12, 12, 12, 1.5); }},
      {"olmo3-60m", [] { return llama_like("olmo3-60m", 384, 8, 8, 8, 1.5); }},
      {"olmo3-30m", [] { return llama_like("olmo3-30m", 256, 4, 8, 8, 1.0); }},
      {"olmo3-14m", [] { return llama_like("olmo3-14m", 128, 4, 8, 8, 1.0); }},
      // Not an OLMo-core preset: olmo3-14m halved (d 64, 4 heads of 16, GQA with 2 kv heads),
      // window 128 and max_seq_len 1024 so both mask kinds occur at demo sequence lengths.
      {"olmo3-tiny",
       [] {
         ModelConfig c = llama_like("olmo3-tiny", 64, 4, 4, 2, 1.0);
         c.layer_window = olmo3_layer_windows(c.n_layers, 128);
         c.max_seq_len = 1024;
         return c;
       }},
  };
  return r;
}

}  // namespace

std::vector<std::string> preset_names() {
  std::vector<std::string> v;
  for (auto& [n, m] : registry()) v.push_back(n);
  return v;
}

ModelConfig preset(const std::string& name, bool padded_vocab) {
  for (auto& [n, make] : registry()) {
    if (n != name) continue;
    ModelConfig c = make();
    c.vocab_size = padded_vocab ? kVocabPadded : kVocabHF;
    validate(c, cat("preset ", name));
    return c;
  }
  std::string list;
  for (auto& n : preset_names()) list += (list.empty() ? "" : ", ") + n;
  throw Error(cat("unknown preset '", name, "' (valid presets: ", list, ")"));
}

// ----------------------------------------------------------------------------- HF config.json

namespace {
using nlohmann::json;

struct Reader {
  const json& j;
  const std::string& path;
  bool has(const char* k) const { return j.contains(k) && !j[k].is_null(); }
  int64_t as_int(const char* k) const {
    const json& v = j[k];
    OLMO_CHECK(v.is_number_integer(), path, ": field \"", k, "\" must be an integer, got ",
               v.dump());
    return v.get<int64_t>();
  }
  double opt_num(const char* k, double def) const {
    if (!has(k)) return def;
    OLMO_CHECK(j[k].is_number(), path, ": field \"", k, "\" must be a number, got ", j[k].dump());
    return j[k].get<double>();
  }
  bool opt_bool(const char* k, bool def) const {
    if (!has(k)) return def;
    OLMO_CHECK(j[k].is_boolean(), path, ": field \"", k, "\" must be a boolean");
    return j[k].get<bool>();
  }
};

// A plain field (FieldUse::hf) of the type of its member; `k` is present.
void read_plain(const Reader& r, const char* k, int64_t& out) { out = r.as_int(k); }
void read_plain(const Reader& r, const char* k, double& out) { out = r.opt_num(k, 0); }
void read_plain(const Reader& r, const char* k, float& out) { out = float(r.opt_num(k, 0)); }

// One RoPE entry: {"rope_type": "default"} or a YaRN dict (HF keys factor,
// original_max_position_embeddings, beta_fast, beta_slow, attention_factor, truncate).
// Returns whether it is YaRN and fills `y`.
bool parse_rope_entry(const json& e, const std::string& key, const std::string& path,
                      RopeScaling& y) {
  OLMO_CHECK(e.is_object(), path, ": field \"", key, "\" must be an object");
  std::string type = "default";
  for (const char* k : {"rope_type", "type"})
    if (e.contains(k) && !e[k].is_null()) {
      OLMO_CHECK(e[k].is_string(), path, ": field \"", key, ".", k, "\" must be a string");
      type = e[k].get<std::string>();
    }
  if (type == "default") return false;
  OLMO_CHECK(type == "yarn", path, ": field \"", key, ".rope_type\" is \"", type,
             "\"; only \"default\" and \"yarn\" RoPE are implemented");
  auto num = [&](const char* k, double def, bool required) {
    if (!e.contains(k) || e[k].is_null()) {
      OLMO_CHECK(!required, path, ": field \"", key, ".", k, "\" is required for YaRN");
      return def;
    }
    OLMO_CHECK(e[k].is_number(), path, ": field \"", key, ".", k, "\" must be a number, got ",
               e[k].dump());
    return e[k].get<double>();
  };
  for (const char* k : {"mscale", "mscale_all_dim"})
    OLMO_CHECK(!e.contains(k) || e[k].is_null(), path, ": field \"", key, ".", k,
               "\" (DeepSeek-style YaRN) is not implemented");
  if (e.contains("truncate") && !e["truncate"].is_null())
    OLMO_CHECK(e["truncate"] == true, path, ": field \"", key, ".truncate\" is ",
               e["truncate"].dump(), "; only the truncated correction range (OLMo 3) is "
               "implemented");
  y.factor = num("factor", 0, true);
  double old = num("original_max_position_embeddings", 0, true);
  OLMO_CHECK(old == std::floor(old), path, ": field \"", key,
             ".original_max_position_embeddings\" must be an integer, got ", old);
  y.old_context_len = int64_t(old);
  // transformers: beta_fast = get("beta_fast") or 32 (a 0 / null takes the default).
  y.beta_fast = num("beta_fast", 32, false);
  if (y.beta_fast == 0) y.beta_fast = 32;
  y.beta_slow = num("beta_slow", 1, false);
  if (y.beta_slow == 0) y.beta_slow = 1;
  y.attention_factor = num("attention_factor", 0, false);
  OLMO_CHECK(y.factor > 1, path, ": field \"", key, ".factor\" is ", y.factor,
             "; YaRN needs a factor > 1");
  return true;
}

double entry_theta(const json& e, const std::string& key, const std::string& path, double def) {
  if (!e.is_object() || !e.contains("rope_theta")) return def;
  OLMO_CHECK(e["rope_theta"].is_number(), path, ": field \"", key,
             ".rope_theta\" must be a number");
  return e["rope_theta"].get<double>();
}

bool same_yarn(const RopeScaling& a, const RopeScaling& b) {
  return a.factor == b.factor && a.beta_fast == b.beta_fast && a.beta_slow == b.beta_slow &&
         a.old_context_len == b.old_context_len && a.attention_factor == b.attention_factor;
}

// rope_theta and YaRN from the legacy rope_theta / rope_scaling fields or from rope_parameters
// (flat, or per layer type as transformers 5.x writes it). One theta for all layers.
double parse_rope(const Reader& r, RopeScaling& yarn) {
  const json& j = r.j;
  double theta = r.opt_num("rope_theta", 500000.0);
  yarn = RopeScaling{};
  if (r.has("rope_scaling")) {
    // transformers (4.57 per-layer rotary embeddings; 5.24 Olmo3Config) merges a legacy
    // rope_scaling into the full_attention entry only: YaRN on full-attention layers.
    RopeScaling y;
    if (parse_rope_entry(j["rope_scaling"], "rope_scaling", r.path, y)) {
      y.variant = YarnVariant::faithful;
      yarn = y;
    }
  }
  if (!r.has("rope_parameters")) return theta;
  const json& p = j["rope_parameters"];
  OLMO_CHECK(p.is_object(), r.path, ": field \"rope_parameters\" must be an object");
  if (p.contains("rope_type") || p.contains("rope_theta") || p.contains("type")) {
    RopeScaling y;
    OLMO_CHECK(!parse_rope_entry(p, "rope_parameters", r.path, y), r.path,
               ": field \"rope_parameters\" is one YaRN entry for all layer types, which is "
               "ambiguous for OLMo 3 (transformers 5.24 ignores it, earlier 5.x applied it to "
               "every layer); give it per layer type (full_attention / sliding_attention) or "
               "use rope_scaling");
    return entry_theta(p, "rope_parameters", r.path, theta);
  }
  double t = theta;
  bool first = true;
  bool has_full = false, has_sliding = false;
  RopeScaling full, sliding;
  for (auto& [k, e] : p.items()) {
    const std::string key = "rope_parameters." + k;
    OLMO_CHECK(k == "full_attention" || k == "sliding_attention", r.path, ": field \"", key,
               "\": unknown layer type (expected full_attention or sliding_attention)");
    OLMO_CHECK(e.is_object(), r.path, ": field \"", key, "\" must be an object");
    double tk = entry_theta(e, key, r.path, theta);
    OLMO_CHECK(first || tk == t, r.path, ": field \"rope_parameters\" has different rope_theta "
               "per layer type (", t, " vs ", tk, "); one theta for all layers is implemented");
    t = tk;
    first = false;
    if (k == "full_attention") has_full = parse_rope_entry(e, key, r.path, full);
    else has_sliding = parse_rope_entry(e, key, r.path, sliding);
  }
  OLMO_CHECK(!has_sliding || has_full, r.path, ": field \"rope_parameters\" gives YaRN to "
             "sliding_attention but not to full_attention; not implemented");
  if (has_full && has_sliding) {
    OLMO_CHECK(same_yarn(full, sliding), r.path, ": field \"rope_parameters\" gives different "
               "YaRN parameters to full_attention and sliding_attention; not implemented");
    full.variant = YarnVariant::hf;
  } else if (has_full) {
    full.variant = YarnVariant::faithful;
  }
  if (has_full || !yarn.enabled()) yarn = has_full ? full : RopeScaling{};
  return t;
}

}  // namespace

ModelConfig config_from_hf_json_text(const std::string& text, const std::string& path) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for 1e99999
    throw Error(cat(path, ": not valid JSON: ", e.what()));
  }
  OLMO_CHECK(j.is_object(), path, ": top level must be a JSON object");
  Reader r{j, path};
  if (r.has("model_type"))
    OLMO_CHECK(j["model_type"] == "olmo3", path, ": field \"model_type\" is ",
               j["model_type"].dump(), ", expected \"olmo3\"");
  if (r.has("hidden_act"))
    OLMO_CHECK(j["hidden_act"] == "silu", path, ": field \"hidden_act\" is ",
               j["hidden_act"].dump(), "; only \"silu\" (SwiGLU) is implemented");
  OLMO_CHECK(!r.opt_bool("attention_bias", false), path,
             ": field \"attention_bias\" is true; OLMo 3 has no biases");
  OLMO_CHECK(!r.opt_bool("tie_word_embeddings", false), path,
             ": field \"tie_word_embeddings\" is true; OLMo 3 has an untied lm_head");

  ModelConfig c;
  c.name = path;
  // The plain fields (FieldUse::hf in config_fields.h) as given; the absent ones take
  // Olmo3Config's defaults below, or are required.
  visit_model_fields(c, [&](const char* name, auto& member, const char*, FieldUse use) {
    if constexpr (std::is_arithmetic_v<std::decay_t<decltype(member)>>) {
      if (use.hf != nullptr && r.has(use.hf)) read_plain(r, use.hf, member);
    } else {
      OLMO_CHECK(use.hf == nullptr, "model/config_fields.h: field '", name,
                 "' has an HF key but is not a number");
    }
  });
  for (const char* k : {"hidden_size", "intermediate_size", "num_hidden_layers",
                        "num_attention_heads", "vocab_size"})
    OLMO_CHECK(r.has(k), path, ": missing required field \"", k, "\"");
  // Bounded before any per-layer table is built (a hostile count must not allocate first).
  OLMO_CHECK(c.n_layers <= 100000, path, ": field \"num_hidden_layers\" (", c.n_layers,
             ") must be at most 100000");
  OLMO_CHECK(c.d_model > 0, path, ": field \"hidden_size\" must be positive, got ", c.d_model);
  OLMO_CHECK(c.n_heads > 0, path, ": field \"num_attention_heads\" must be positive, got ",
             c.n_heads);
  OLMO_CHECK(c.n_layers > 0, path, ": field \"num_hidden_layers\" must be positive, got ",
             c.n_layers);
  if (!r.has("num_key_value_heads")) c.n_kv_heads = c.n_heads;
  OLMO_CHECK(c.n_kv_heads > 0 && c.n_heads % c.n_kv_heads == 0, path,
             ": field \"num_attention_heads\" (", c.n_heads,
             ") is not a multiple of \"num_key_value_heads\" (", c.n_kv_heads, ")");
  if (!r.has("head_dim")) {
    OLMO_CHECK(c.d_model % c.n_heads == 0, path, ": field \"hidden_size\" (", c.d_model,
               ") is not divisible by \"num_attention_heads\" (", c.n_heads,
               ") and no \"head_dim\" is given");
    c.head_dim = c.d_model / c.n_heads;
  }
  if (!r.has("rms_norm_eps")) c.norm_eps = 1e-5f;
  if (!r.has("max_position_embeddings")) c.max_seq_len = 2048;
  c.rope_theta = parse_rope(r, c.yarn);

  int64_t window = r.has("sliding_window") ? r.as_int("sliding_window") : -1;
  if (!j.contains("sliding_window")) window = 4096;  // Olmo3Config default
  std::vector<std::string> types;
  if (r.has("layer_types")) {
    OLMO_CHECK(j["layer_types"].is_array(), path, ": field \"layer_types\" must be an array");
    for (auto& t : j["layer_types"]) {
      OLMO_CHECK(t.is_string(), path, ": field \"layer_types\" must hold strings");
      types.push_back(t.get<std::string>());
    }
    OLMO_CHECK(int64_t(types.size()) == c.n_layers, path, ": field \"layer_types\" has ",
               types.size(), " entries but \"num_hidden_layers\" is ", c.n_layers);
  } else {
    for (int64_t i = 0; i < c.n_layers; ++i)
      types.push_back((i + 1) % 4 != 0 ? "sliding_attention" : "full_attention");
  }
  c.layer_window.resize(c.n_layers);
  for (int64_t i = 0; i < c.n_layers; ++i) {
    if (types[i] == "full_attention") {
      c.layer_window[i] = 0;
    } else if (types[i] == "sliding_attention") {
      OLMO_CHECK(window > 0, path, ": layer_types[", i,
                 "] is \"sliding_attention\" but \"sliding_window\" is ",
                 j.contains("sliding_window") ? j["sliding_window"].dump() : "missing");
      c.layer_window[i] = window;
    } else {
      throw Error(cat(path, ": field \"layer_types\"[", i, "] is \"", types[i],
                      "\", expected \"sliding_attention\" or \"full_attention\""));
    }
  }
  validate(c, path);
  return c;
}

ModelConfig config_from_hf_json(const std::string& path) {
  OLMO_CHECK(file_exists(path), path, ": config.json not found");
  return config_from_hf_json_text(read_file(path), path);
}

std::string config_to_hf_json(const ModelConfig& c) {
  json j;
  j["architectures"] = {"Olmo3ForCausalLM"};
  j["model_type"] = "olmo3";
  j["attention_bias"] = false;
  j["attention_dropout"] = 0.0;
  j["dtype"] = "float32";
  j["hidden_act"] = "silu";
  visit_model_fields(c, [&](const char*, const auto& member, const char*, FieldUse use) {
    if (use.hf != nullptr) j[use.hf] = member;  // the plain fields (config_fields.h)
  });
  j["tie_word_embeddings"] = false;
  j["initializer_range"] = 0.02;
  // dolma2 tokenizer ids when the vocabulary is the real one; null otherwise.
  bool dolma = c.vocab_size >= kVocabHF;
  j["pad_token_id"] = dolma ? json(100277) : json(nullptr);
  j["eos_token_id"] = dolma ? json(100257) : json(nullptr);
  j["bos_token_id"] = nullptr;
  int64_t window = 0;
  json types = json::array();
  for (int64_t w : c.layer_window) {
    types.push_back(w > 0 ? "sliding_attention" : "full_attention");
    if (w > 0) {
      OLMO_CHECK(window == 0 || window == w, c.name,
                 ": HF config.json holds one sliding_window but layers use ", window, " and ", w);
      window = w;
    }
  }
  j["layer_types"] = types;
  j["sliding_window"] = window > 0 ? json(window) : json(4096);
  json rp = {{"rope_type", "default"}, {"rope_theta", c.rope_theta}};
  json full = rp, sliding = rp;
  if (c.yarn.enabled()) {
    // YaRN per layer type: full_attention always, sliding_attention for variant hf (read back
    // by config_from_hf_json_text as the same variant; transformers 5.24 runs it that way).
    const RopeScaling& y = c.yarn;
    full = {{"rope_type", "yarn"},
            {"rope_theta", c.rope_theta},
            {"factor", y.factor},
            {"original_max_position_embeddings", y.old_context_len},
            {"beta_fast", y.beta_fast},
            {"beta_slow", y.beta_slow},
            {"attention_factor",
             y.effective_attention_factor()}};
    if (y.variant == YarnVariant::hf) sliding = full;
  }
  j["rope_parameters"] = {{"full_attention", full}, {"sliding_attention", sliding}};
  j["use_cache"] = true;
  return j.dump(2) + "\n";
}

}  // namespace olmo::model
