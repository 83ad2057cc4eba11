// Token-id line files (the input of `olmo logits --tokens`): one sequence of whitespace-separated
// decimal token ids per line; blank lines are skipped.
// Contract: a word that is not a decimal integer, or an id outside [0, vocab), throws
// olmo::Error "<path>:<line>: ..."; a file without any sequence throws "<path>: no token
// sequences". vocab must lie in [1, 2^31). Cost: one pass over the text, O(ids) memory.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace olmo::data {

// Parses the text of a token-id line file (`path` only names it in messages).
std::vector<std::vector<int32_t>> parse_token_lines(std::string_view text, int64_t vocab,
                                                    const std::string& path);
// Reads and parses the file at `path` (missing file: "<path>: token file not found").
std::vector<std::vector<int32_t>> read_token_lines(const std::string& path, int64_t vocab);

}  // namespace olmo::data
