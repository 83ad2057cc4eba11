// The groups of the OLMo 3 parameters by kind of tensor, pooled over all layers (14 names, in
// record order): embed, attn_q, attn_k, attn_v, attn_o, q_norm, k_norm, mlp_gate, mlp_up,
// mlp_down, attn_norm, mlp_norm, final_norm, lm_head. Used by the param_rms records
// (monitor/param_rms.h) and the OLMO_TEST_PARAM_SCALE fault switch (train/test_faults.h);
// scripts/ref_metrics.py uses the same names on OLMo-core's model.
#pragma once
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "model/params.h"

namespace olmo::model {

// The group of an HF tensor name (model/params.h), "" for a name outside the OLMo 3 layout.
std::string param_group(const std::string& hf_name);
// The group names in record order.
const std::vector<std::string>& param_group_names();
// A block tensor's group and layer, "GROUP.LAYER" (e.g. attn_q.1 for
// model.layers.1.self_attn.q_proj.weight); "" for a tensor outside the blocks.
std::string param_layer_key(const std::string& hf_name);
// The flat [offset, offset + numel) ranges of one group's tensors, or of the one tensor a
// GROUP.LAYER key names (empty for an unknown name).
std::vector<std::pair<size_t, size_t>> param_group_ranges(const model::ParamLayout& l,
                                                          const std::string& group);

}  // namespace olmo::model
