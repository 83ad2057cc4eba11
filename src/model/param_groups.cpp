// Tensor-kind groups of the OLMo 3 parameters (see param_groups.h).
#include "model/param_groups.h"

namespace olmo::model {

namespace {
// HF name suffix -> group (model.layers.<i>.<suffix> inside a block).
const std::pair<const char*, const char*> kBlock[] = {
    {"self_attn.q_proj.weight", "attn_q"},   {"self_attn.k_proj.weight", "attn_k"},
    {"self_attn.v_proj.weight", "attn_v"},   {"self_attn.o_proj.weight", "attn_o"},
    {"self_attn.q_norm.weight", "q_norm"},   {"self_attn.k_norm.weight", "k_norm"},
    {"mlp.gate_proj.weight", "mlp_gate"},    {"mlp.up_proj.weight", "mlp_up"},
    {"mlp.down_proj.weight", "mlp_down"},    {"post_attention_layernorm.weight", "attn_norm"},
    {"post_feedforward_layernorm.weight", "mlp_norm"}};
}  // namespace

std::string param_group(const std::string& n) {
  if (n == "model.embed_tokens.weight") return "embed";
  if (n == "model.norm.weight") return "final_norm";
  if (n == "lm_head.weight") return "lm_head";
  const std::string pre = "model.layers.";
  if (n.rfind(pre, 0) != 0) return "";
  const size_t dot = n.find('.', pre.size());
  if (dot == std::string::npos) return "";
  const std::string rest = n.substr(dot + 1);
  for (auto& [suffix, g] : kBlock)
    if (rest == suffix) return g;
  return "";
}

const std::vector<std::string>& param_group_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v = {"embed"};
    for (auto& [suffix, g] : kBlock) v.push_back(g);
    v.push_back("final_norm");
    v.push_back("lm_head");
    return v;
  }();
  return names;
}

std::string param_layer_key(const std::string& n) {
  const std::string g = param_group(n), pre = "model.layers.";
  if (g.empty() || n.rfind(pre, 0) != 0) return "";
  return g + "." + n.substr(pre.size(), n.find('.', pre.size()) - pre.size());
}

std::vector<std::pair<size_t, size_t>> param_group_ranges(const model::ParamLayout& l,
                                                          const std::string& group) {
  std::vector<std::pair<size_t, size_t>> out;
  for (const auto& p : l.info)
    if (param_group(p.name) == group || param_layer_key(p.name) == group)
      out.emplace_back(p.offset, p.offset + p.numel);
  return out;
}

}  // namespace olmo::model
