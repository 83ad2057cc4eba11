// Per-group weight and update RMS records (see param_rms.h).
#include "train/param_rms.h"

#include <cmath>
#include <cstring>

#include <nlohmann/json.hpp>

#include "model/olmo3.h"
#include "train/metrics_log.h"
#include "train/progress.h"
#include "train/trainer.h"

namespace olmo::train {

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

std::vector<std::pair<size_t, size_t>> param_group_ranges(const model::ParamLayout& l,
                                                          const std::string& group) {
  std::vector<std::pair<size_t, size_t>> out;
  for (const auto& p : l.info)
    if (param_group(p.name) == group) out.emplace_back(p.offset, p.offset + p.numel);
  return out;
}

void ParamRms::on_start(Trainer& t) {
  enabled_ = interval_ > 0 && t.rank() == 0;
  if (interval_ > 0 && t.config().dist.zero_stage == 3) {
    enabled_ = false;
    if (t.rank() == 0)
      t.progress().message("note: trainer.param_rms_interval: no param_rms records under "
                           "ZeRO-3 (no rank holds the full weights)");
  }
}

void ParamRms::pre_step(Trainer& t, data::DataLoader::Batch&) {
  if (!due(t.step())) return;
  const float* w = t.model().params();
  before_.assign(w, w + t.model().num_params());  // keeps its capacity between steps
  have_before_ = true;
}

void ParamRms::post_step(Trainer& t, const StepResult& r) {
  if (!due(r.step) || !have_before_) return;
  have_before_ = false;
  const float* w = t.model().params();
  nlohmann::json weight = nlohmann::json::object(), update = nlohmann::json::object();
  const auto& layout = t.model().layout();
  for (const std::string& g : param_group_names()) {
    double ww = 0, uu = 0;
    size_t n = 0;
    for (auto [a, b] : param_group_ranges(layout, g)) {
      for (size_t i = a; i < b; ++i) {
        const double x = w[i], d = double(w[i]) - double(before_[i]);
        ww += x * x;
        uu += d * d;
      }
      n += b - a;
    }
    if (n == 0) continue;
    weight[g] = std::sqrt(ww / double(n));
    update[g] = std::sqrt(uu / double(n));
  }
  t.metrics().write({{"kind", "param_rms"}, {"step", r.step}, {"weight", weight},
                     {"update", update}});
}

}  // namespace olmo::train
