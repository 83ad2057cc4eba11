// The trainer position, model section and parameter layout of a checkpoint (see train_state.h).
#include "train/train_state.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "model/config_json.h"

using nlohmann::json;

namespace olmo::train {

void TrainerPosition::visit_state(StateVisitor& v) {
  StateVisitor::Section s(v, "trainer");
  v.field("step", step, {"trainer"});
  v.field("tokens_seen", tokens_seen, {"trainer"});
  if (total_steps >= 0) v.info("total_steps", total_steps);
  v.info("t_max", t_max, {"schedule"});
  v.info("lr0", lr0, {"schedule"});
  if (lr >= 0) v.info("lr", lr);
  v.info("world", world);
  v.info("dist_reduce", dist_reduce);
  v.info("scheduler", scheduler, {"schedule"});
  if (!imported_from.empty()) v.info("imported_from", imported_from);
}

// The architecture fields that must agree to load weights (max_seq_len and YaRN may differ on a
// phase start: stage 3 extends the context). A resume continues the same model: every
// architecture field of the description must agree (precision may differ: the checkpoint holds
// fp32 master weights under either).
static void check_same_model(const model::ModelConfig& want, const json& have,
                             const std::string& dir, bool resume) {
  const json w = model::model_config_to_json(want);
  std::vector<std::string> keys = {"d_model", "n_layers", "n_heads", "n_kv_heads", "head_dim",
                                   "ffn_hidden", "vocab_size"};
  if (resume)
    for (const std::string& k : model::model_config_field_names())
      if (k != "name" && k != "precision" &&
          std::find(keys.begin(), keys.end(), k) == keys.end())
        keys.push_back(k);
  for (const std::string& k : keys)
    OLMO_CHECK(have.contains(k) && have[k] == w[k], dir, ": checkpoint model field '", k, "' is ",
               have.contains(k) ? have[k].dump() : "missing", " but this config has ", w[k].dump(),
               resume ? " (a resume must continue the same model)" : "");
}

void visit_model_section(StateVisitor& v, const model::ModelConfig& cfg, bool resume,
                         const std::string& where) {
  StateVisitor::Section s(v, "model");
  json j = v.loading() ? json() : model::model_config_to_json(cfg);
  v.whole(j, {});
  if (v.loading()) check_same_model(cfg, j, where, resume);
}

ckpt::FlatLayout param_layout(const model::Olmo3& m) {
  ckpt::FlatLayout l;
  for (const auto& p : m.params_info()) l.push_back({p.name, p.shape, p.offset, p.numel});
  return l;
}

}  // namespace olmo::train
