// Hugging Face model directories: config.json + model.safetensors, or sharded
// model.safetensors.index.json ({"weight_map": {tensor name: shard file}}) + shards.
// Tensors are matched by HF name (params.h); F32, BF16, F16 and F64 tensors are converted to
// fp32. Errors name the file and the tensor: missing tensor, unexpected tensor, wrong shape,
// non-float dtype, plus every safetensors format violation (safetensors.h).
#pragma once
#include <string>

#include "model/olmo3.h"

namespace olmo::model {

Olmo3 load_hf(const std::string& dir);
// Fill `m`'s parameters from the safetensors in `dir` (config.json is not read).
void load_hf_weights(Olmo3& m, const std::string& dir);
// Creates `dir` if needed; writes config.json and model.safetensors (fp32, metadata format=pt).
void save_hf(const Olmo3& m, const std::string& dir);

}  // namespace olmo::model
