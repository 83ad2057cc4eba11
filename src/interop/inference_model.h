// The model of a finished or running training run, for inference and export: weights of a
// checkpoint dir (stepN), of a run dir's newest complete checkpoint, or of an HF model dir
// (config.json + model.safetensors). Checkpoints give the trained architecture (YaRN included,
// from the "model" section); inference runs the fp32 master weights in fp32.
// Cost: one read of the weights (4 B per parameter); the optimizer state is not read.
#pragma once
#include <memory>
#include <string>

#include "model/olmo3.h"

namespace olmo::train {

std::unique_ptr<model::Olmo3> load_model_for_inference(const std::string& dir);

}  // namespace olmo::train
