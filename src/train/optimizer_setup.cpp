// Optimizer groups and constants of a run (see optimizer_setup.h).
#include "train/optimizer_setup.h"

#include <string>

namespace olmo::train {

std::vector<optim::ParamGroup> param_groups(const model::Olmo3& m, const OptimSection& o) {
  std::vector<optim::ParamGroup> groups;
  for (auto& p : m.params_info()) {
    const double wd = p.is_embedding ? o.embedding_weight_decay : o.weight_decay;
    const std::string name = p.is_embedding ? "embeddings" : "default";
    if (!groups.empty() && groups.back().name == name &&
        groups.back().offset + groups.back().numel == p.offset) {
      groups.back().numel += p.numel;
    } else {
      groups.push_back({p.offset, p.numel, wd, name});
    }
  }
  return groups;
}

optim::AdamWConfig adamw_config(const OptimSection& o) {
  optim::AdamWConfig ac;
  ac.beta1 = o.betas[0];
  ac.beta2 = o.betas[1];
  ac.eps = o.eps;
  return ac;
}

}  // namespace olmo::train
