// From the training config's `model:` section (plus data.seq_len) to a model::ModelConfig:
// start from the preset (if any), apply the explicit fields, expand window_pattern to one window
// per layer (-1 -> 0 = full causal; force_full_first/last), max_seq_len = data.seq_len.
// Errors name the config key. YaRN (stage 3) is accepted by the config but not computed by the
// model yet: model_config() throws for yarn_factor > 0 unless allow_unsupported (dry runs).
#pragma once
#include "model/config.h"
#include "train/config.h"

namespace olmo::train {

model::ModelConfig model_config(const Config& c, bool allow_unsupported = false);

}  // namespace olmo::train
