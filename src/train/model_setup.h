// From the training config's `model:` section (plus data.seq_len) to a model::ModelConfig:
// start from the preset (if any), apply the explicit fields, expand window_pattern to one window
// per layer (-1 -> 0 = full causal; force_full_first/last), max_seq_len = data.seq_len.
// Errors name the config key. model.yarn_* (stage 3) map onto ModelConfig::yarn (factor 0 =
// none; factor <= 1 otherwise, or an old context longer than data.seq_len, is an error);
// model.yarn_variant faithful | hf. allow_unsupported is kept for callers and has no effect.
#pragma once
#include "model/config.h"
#include "train/config.h"

namespace olmo::train {

model::ModelConfig model_config(const Config& c, bool allow_unsupported = false);

}  // namespace olmo::train
