// Activation checkpointing of transformer blocks: which blocks keep only their input during the
// forward and recompute their activations in the backward (model/olmo3.h does it).
// Modes follow OLMo-core's TransformerActivationCheckpointingConfig (train_module/transformer/
// config.py) and TransformerActivationCheckpointingMode:
//   none             every block keeps all its activations (flops.h activation_floats_per_token)
//   full             every block is checkpointed
//   selected_blocks  block i is checkpointed when i % block_interval == 0 (OLMo-core's rule)
//   budget           OLMo-core: activation_memory_budget in [0, 1], 0 = recompute everything,
//                    1 = recompute nothing, solved by torch.compile's min-cut partitioner per
//                    op. Here the same fraction over whole blocks: the fewest checkpointed
//                    blocks (spread evenly over the depth) whose stored activations are at most
//                    budget x those of mode none; if none reaches it, every block (= full).
// OLMo-core's selected_modules / selected_ops (per-module granularity) are not offered.
// A checkpointed block stores x [N,D] (its input) instead of its per-layer activations; the
// model keeps one extra block's worth of activations as the recompute slot when any block is
// checkpointed. Gradients are bitwise those of mode none (the recompute runs the same kernels on
// the same inputs; tests/model/act_checkpoint_test.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace olmo::model {

struct ModelConfig;

enum class AcMode { none, full, selected_blocks, budget };
// The names of AcMode, in its order (the config's choice table reads this list).
inline constexpr const char* kAcModeNames[] = {"none", "full", "selected_blocks", "budget"};
const char* ac_mode_name(AcMode m);
// "none" | "full" | "selected_blocks" | "budget"; anything else throws "<where>: ..." naming
// the valid values.
AcMode parse_ac_mode(const std::string& s, const std::string& where);

struct ActCheckpointing {
  AcMode mode = AcMode::none;
  int64_t block_interval = 0;  // selected_blocks: >= 1
  double budget = 1.0;         // budget: in [0, 1]
};

// Throws "<where>: <problem>" for a block_interval < 1 under selected_blocks or a budget
// outside [0, 1] under budget.
void validate(const ActCheckpointing& a, const std::string& where);

// Per block: 1 = checkpointed. Size c.n_layers. Cost O(n_layers^2) for budget (trivial).
std::vector<char> checkpointed_blocks(const ModelConfig& c);

}  // namespace olmo::model
