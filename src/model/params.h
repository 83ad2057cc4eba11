// Flat parameter layout of an OLMo 3 model: every tensor lives at an offset in one contiguous
// fp32 buffer (parameters and gradients share the layout), named by its Hugging Face name.
// Order = HF state-dict order: model.embed_tokens, then per layer q/k/v/o_proj, q_norm, k_norm,
// mlp gate/up/down, post_attention_layernorm, post_feedforward_layernorm, then model.norm and
// lm_head. Linear weights are [out_features, in_features] row-major (nn.Linear).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"

namespace olmo::model {

struct ParamInfo {
  std::string name;            // HF tensor name
  std::vector<int64_t> shape;  // HF shape
  size_t offset = 0, numel = 0;  // in floats, into the flat buffer
  bool is_embedding = false;   // model.embed_tokens.weight (no weight decay in OLMo 3)
};

// Offsets (in floats) of one block's tensors.
struct LayerOffsets {
  size_t q, k, v, o;            // q_proj [Q,D], k_proj [KV*hd,D], v_proj [KV*hd,D], o_proj [D,Q]
  size_t q_norm, k_norm;        // [Q], [KV*hd]
  size_t gate, up, down;        // gate/up [F,D], down [D,F]
  size_t attn_norm, ffn_norm;   // post_attention_layernorm [D], post_feedforward_layernorm [D]
};

struct ParamLayout {
  std::vector<ParamInfo> info;
  size_t embed = 0;             // [V,D]
  std::vector<LayerOffsets> layers;
  size_t final_norm = 0;        // [D]
  size_t lm_head = 0;           // [V,D]
  size_t total = 0;             // floats
};

ParamLayout make_layout(const ModelConfig& c);

}  // namespace olmo::model
