// Where a config's token data lives: a path naming OLMo token files, expanded to the files.
// Used by training (data.mix), held-out sets, validation and the audit alike.
#pragma once
#include <string>
#include <vector>

namespace olmo::data {

// PATH is a .npy token file (itself), a directory (its *.npy files, sorted by name), or a .mix
// file (data/mix.h: its paths in file order). Throws olmo::Error naming PATH when it does not
// exist or a directory holds no .npy file (and mix errors name the mix file and line).
std::vector<std::string> expand_token_paths(const std::string& path);

}  // namespace olmo::data
