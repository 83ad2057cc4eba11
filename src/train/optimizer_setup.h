// The optimizer a run builds from its `optim:` section: OLMo 3's AdamW parameter groups (the
// token embedding with optim.embedding_weight_decay, as OLMo-core's OptimGroupOverride on
// "embeddings.weight"; every other tensor with optim.weight_decay) and the AdamW constants.
// Used by the trainer and by `olmo bench step`, so a benchmark times the update a run does.
#pragma once
#include <vector>

#include "model/olmo3.h"
#include "optim/adamw.h"
#include "train/config.h"

namespace olmo::train {

// Contiguous runs of tensors (in parameter-buffer order) with the same decay, merged into one
// group each: for OLMo 3, [embeddings | default].
std::vector<optim::ParamGroup> param_groups(const model::Olmo3& m, const OptimSection& o);

optim::AdamWConfig adamw_config(const OptimSection& o);

}  // namespace olmo::train
