// OLMo 3 model configuration: the hyper-parameters of one model, the named presets
// (olmo3-7b/32b/1b/190m from OLMo-core's TransformerConfig.olmo3_*, plus small sizes for tests
// and demos), and parsing of a Hugging Face `config.json` (Olmo3Config).
//
// Architecture facts (../shared/reference/olmo3_spec.md 1.1-1.2): FFN hidden size follows
// OLMo-core's llama_like rule int(int(8*d/3) * multiplier) rounded up to `multiple_of`; sliding
// window 4096 on layers with (i+1) % 4 != 0, full attention otherwise and on the last layer;
// vocab 100278 (HF checkpoint) padded to a multiple of 128 (100352) for training.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/rope.h"
#include "model/act_checkpoint.h"

namespace olmo::model {

inline constexpr int64_t kVocabHF = 100278;      // dolma2 tokenizer vocabulary
inline constexpr int64_t kVocabPadded = 100352;  // padded to a multiple of 128 for training

// YaRN RoPE scaling (stage 3 and the released long-context model; spec 2.4). Two variants:
//   faithful: as OLMo-core trained OLMo 3 (TransformerConfig.with_rope_scaling(...,
//             full_attn_layers_only=True)): only full-attention layers (window 0) get the scaled
//             frequencies and the attention factor; sliding layers keep plain RoPE. Frequencies
//             rounded as OLMo-core's YaRNRoPEScalingConfig computes them.
//   hf:       every layer gets YaRN, rounded as transformers' _compute_yarn_parameters. This is
//             what transformers 5.x releases with one rotary embedding for all layers ran for a
//             released long-context checkpoint (spec 2.4); transformers 5.24 runs it for a
//             config.json whose rope_parameters give YaRN to both layer types (a legacy
//             rope_scaling field it applies to full-attention layers only, = faithful).
enum class YarnVariant { faithful, hf };
// The names of YarnVariant, in its order (the trainer config's choice table reads this list).
inline constexpr const char* kYarnVariantNames[] = {"faithful", "hf"};
const char* yarn_variant_name(YarnVariant v);
// "faithful" | "hf"; anything else throws "<where>: ..." naming the valid values.
YarnVariant parse_yarn_variant(const std::string& s, const std::string& where);

struct RopeScaling {
  double factor = 0;  // 0 = no YaRN; otherwise > 1
  double beta_fast = 32, beta_slow = 1;
  int64_t old_context_len = 8192;  // must not exceed max_seq_len
  double attention_factor = 0;     // 0 = 0.1 ln(factor) + 1
  YarnVariant variant = YarnVariant::faithful;
  bool enabled() const { return factor != 0; }
  // The attention (mscale) factor the kernels use: attention_factor, or 0.1 ln(factor) + 1.
  double effective_attention_factor() const;
  // The RoPE table kernel's view of these settings (kernels/rope.h), one mapping for every model
  // path (training forward, KV-cache decoder).
  kernels::YarnParams params() const;
  kernels::YarnFormula formula() const;
};

// Compute precision of the matmuls; not part of the architecture (checkpoints hold the fp32
// master weights under either, so a run saved under one resumes under the other). fp32: every
// GEMM in fp32. bf16_mixed: bf16 GEMM inputs, fp32 weights/gradients/everything else (olmo3.h).
enum class Precision { fp32, bf16_mixed };
inline const char* precision_name(Precision p) {
  return p == Precision::bf16_mixed ? "bf16_mixed" : "fp32";
}

struct ModelConfig {
  std::string name;
  int64_t d_model = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0, ffn_hidden = 0;
  int64_t vocab_size = 0;  // rows of the embedding and of lm_head
  double rope_theta = 500000;
  float norm_eps = 1e-6f;
  std::vector<int64_t> layer_window;  // per layer: query i sees keys i-w+1..i; 0 = full causal
  int64_t max_seq_len = 8192;         // RoPE table length / longest sequence accepted
  RopeScaling yarn;                   // YaRN (off by default)
  Precision precision = Precision::fp32;  // matmul precision (not saved with the architecture)
  ActCheckpointing act_ckpt;              // which blocks recompute in backward (not architecture)

  int64_t q_dim() const { return n_heads * head_dim; }     // width of q (and of q_norm)
  int64_t kv_dim() const { return n_kv_heads * head_dim; } // width of k, v (and of k_norm)
  // Whether layer l uses the YaRN table (faithful: full-attention layers only; hf: all).
  bool yarn_on_layer(int64_t l) const {
    return yarn.enabled() &&
           (yarn.variant == YarnVariant::hf || layer_window[size_t(l)] == 0);
  }
};

// Throws olmo::Error "<where>: <problem>" when the configuration is inconsistent (non-positive
// sizes, heads not divisible by kv-heads, odd head_dim, layer_window length != n_layers, a YaRN
// factor <= 1, a YaRN old context <= 0 or larger than max_seq_len, bad betas, ...).
void validate(const ModelConfig& c, const std::string& where);

// A named preset (vocab 100352 when padded_vocab, else 100278). Unknown names throw an
// olmo::Error naming the preset and listing the valid ones.
ModelConfig preset(const std::string& name, bool padded_vocab = true);
std::vector<std::string> preset_names();

// OLMo 3 layer pattern: window `w` where (i+1) % 4 != 0, full (0) otherwise and on the last layer.
std::vector<int64_t> olmo3_layer_windows(int64_t n_layers, int64_t w = 4096);

// Parse an HF Olmo3Config config.json. Errors name the file and the field. Defaults follow
// transformers' Olmo3Config where a field is absent (num_key_value_heads = heads, rms_norm_eps
// 1e-5, sliding_window 4096, layer_types = the OLMo 3 pattern, rope_theta 500000,
// max_position_embeddings 2048). RoPE: a legacy "rope_scaling" {"rope_type": "yarn", ...} is
// YaRN on the full-attention layers (variant faithful; transformers 4.57 and 5.24 apply it so);
// "rope_parameters" per layer type with YaRN on full_attention only is faithful, with the same
// YaRN on both types is variant hf. Rejects what this implementation does not compute: rope
// types other than "default" / "yarn", YaRN on sliding layers only, different YaRN per type,
// YaRN truncate=false or mscale fields, attention bias, tied embeddings, activations other
// than silu.
ModelConfig config_from_hf_json(const std::string& path);
// The same from the text of a config.json (`path` only used in messages).
ModelConfig config_from_hf_json_text(const std::string& text, const std::string& path);
// config.json text for `c` (model_type olmo3, fp32), readable by transformers.
std::string config_to_hf_json(const ModelConfig& c);

}  // namespace olmo::model
