// The reference of every training config key (docs/config.md), generated from the field table
// (train/config.h describe_fields, choice_fields): key, type, default, allowed values, doc string,
// grouped by section. `olmo info --config-reference` prints it; the ctest train_config_reference
// regenerates it and compares it with the checked-in docs/config.md.
#pragma once
#include <string>

namespace olmo::train {

// The whole Markdown document (deterministic: the same binary gives the same bytes).
std::string config_reference_markdown();

}  // namespace olmo::train
