// Per-group weight and update RMS records (see param_rms.h).
#include "monitor/param_rms.h"

#include <cmath>
#include <cstring>

#include <nlohmann/json.hpp>

#include "model/olmo3.h"
#include "model/param_groups.h"
#include "train/metrics_log.h"
#include "train/progress.h"
#include "train/trainer.h"

namespace olmo::train {

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
  for (const std::string& g : model::param_group_names()) {
    double ww = 0, uu = 0;
    size_t n = 0;
    for (auto [a, b] : model::param_group_ranges(layout, g)) {
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
  // Each block tensor alone beside its group: GROUP.LAYER (a deviation in one layer's tensor
  // is diluted in its group's figure).
  for (const auto& p : layout.info) {
    const std::string key = model::param_layer_key(p.name);
    if (key.empty() || p.numel == 0) continue;
    double ww = 0, uu = 0;
    for (size_t i = p.offset; i < p.offset + p.numel; ++i) {
      const double x = w[i], d = double(w[i]) - double(before_[i]);
      ww += x * x;
      uu += d * d;
    }
    weight[key] = std::sqrt(ww / double(p.numel));
    update[key] = std::sqrt(uu / double(p.numel));
  }
  t.metrics().write({{"kind", "param_rms"}, {"step", r.step}, {"weight", weight},
                     {"update", update}});
}

}  // namespace olmo::train
