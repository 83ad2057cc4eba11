// Builds the flat parameter layout (see params.h) and its units (param_units.h).
#include "model/params.h"

#include "model/param_units.h"

namespace olmo::model {

ParamLayout make_layout(const ModelConfig& c) {
  ParamLayout L;
  const int64_t D = c.d_model, Q = c.q_dim(), K = c.kv_dim(), F = c.ffn_hidden, V = c.vocab_size;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, bool emb = false) {
    size_t n = 1;
    for (int64_t s : shape) n *= size_t(s);
    L.info.push_back({name, std::move(shape), L.total, n, emb});
    L.total += n;
    return L.info.back().offset;
  };
  L.embed = add("model.embed_tokens.weight", {V, D}, true);
  for (int64_t i = 0; i < c.n_layers; ++i) {
    std::string p = "model.layers." + std::to_string(i) + ".";
    LayerOffsets o{};
    o.q = add(p + "self_attn.q_proj.weight", {Q, D});
    o.k = add(p + "self_attn.k_proj.weight", {K, D});
    o.v = add(p + "self_attn.v_proj.weight", {K, D});
    o.o = add(p + "self_attn.o_proj.weight", {D, Q});
    o.q_norm = add(p + "self_attn.q_norm.weight", {Q});
    o.k_norm = add(p + "self_attn.k_norm.weight", {K});
    o.gate = add(p + "mlp.gate_proj.weight", {F, D});
    o.up = add(p + "mlp.up_proj.weight", {F, D});
    o.down = add(p + "mlp.down_proj.weight", {D, F});
    o.attn_norm = add(p + "post_attention_layernorm.weight", {D});
    o.ffn_norm = add(p + "post_feedforward_layernorm.weight", {D});
    L.layers.push_back(o);
  }
  L.final_norm = add("model.norm.weight", {D});
  L.lm_head = add("lm_head.weight", {V, D});
  return L;
}

std::vector<UnitRange> param_units(const ParamLayout& l) {
  std::vector<UnitRange> u;
  const size_t first = l.layers.empty() ? l.final_norm : l.layers[0].q;
  u.push_back({l.embed, first});
  for (size_t i = 0; i < l.layers.size(); ++i)
    u.push_back({l.layers[i].q, i + 1 < l.layers.size() ? l.layers[i + 1].q : l.final_norm});
  u.push_back({l.final_norm, l.total});
  return u;
}

}  // namespace olmo::model
