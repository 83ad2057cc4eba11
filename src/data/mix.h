// Data mix files as OLMo-core's DataMix.build (data/mixes/__init__.py): one `label,path` per
// line, blank lines and lines starting with '#' skipped, `{TOKENIZER}` in a path replaced by the
// tokenizer id, each path resolved against a data root (default: the mix file's directory).
// Errors name the mix file and line: a malformed line, an empty label or path, and (when
// check_exists) a token file that does not exist. Files keep mix-file order.
#pragma once
#include <string>
#include <vector>

namespace olmo::data {

struct Mix {
  std::vector<std::string> labels;
  std::vector<std::string> paths;  // resolved
};

Mix load_mix(const std::string& mix_file, const std::string& data_root = "",
             const std::string& tokenizer_id = "allenai/dolma3-tokenizer",
             bool check_exists = true);

}  // namespace olmo::data
