// OLMo-core's data mixes by name (DataMix in olmo_core/data/mixes/__init__.py, version 3.0.0):
// the mix lists it ships are vendored in configs/mixes/olmo-core-3.0.0/NAME.txt (SOURCE.md there
// says where from). build_named_mix(NAME, ROOT, TOKENIZER) gives the token files as
// DataMix(NAME).build(ROOT, TOKENIZER):
//   * lines are stripped; empty lines and lines starting with '#' are skipped; every other line
//     is exactly `label,path` (one comma) and its path must contain {TOKENIZER} (else an error
//     naming the mix file and the 1-based line number, comment lines counted);
//   * {TOKENIZER} is replaced by the mix's tokenizer id (mix_tokenizer_id below);
//   * the file is ROOT + "/" + path (one '/' added when ROOT does not end with one), in list order.
// Names: the file stems of the vendored folder, plus OLMo-core's aliases dolma3-0625-6T-mix,
// dolma3-0925-6T-mix (the 0625 / 0925 pre-training mixes) and dolma3-0925-150B-mix
// (OLMo-mix-0625-150Bsample). An unknown name is an error listing the known ones.
// Cost: one read of the list (up to ~1.6 MB, 12k lines); mix_census stats every file.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/mix.h"

namespace olmo::data {

// $OLMO_MIXES_DIR when set, else OLMO_SOURCE_DIR/configs/mixes/olmo-core-3.0.0.
std::string named_mix_dir();
// Mix names in the vendored folder, sorted.
std::vector<std::string> known_mix_names();
// True when `value` reads as a mix name rather than a path: no '/', no file extension
// (.mix, .npy, .txt ...), and no file or directory of that name.
bool looks_like_mix_name(const std::string& value);
// The canonical name of `name` (aliases resolved); throws listing the known names.
std::string canonical_mix_name(const std::string& name);
// OLMo-core's {TOKENIZER} value for mix `name` (canonical) and tokenizer identifier `tokenizer`
// (TokenizerName values, e.g. allenai/dolma2-tokenizer):
//   v3-small-ppl-validation, c4-ppl-validation: gpt-neox-olmo-dolma-v1_5 -> gptneox20b,
//                                               dolma2 -> dolma2-tokenizer
//   code-fresh-ppl-validation:                  dolma2 -> dolma2-tokenizer
//   OLMo-mix-0625:                              allenai/dolma2-tokenizer-sigdig ->
//                                               dolma2-tokenizer-sigdig
//   the OLMo 3 official / midtraining / longmino mixes (0625, 0925):
//                                               dolma2 -> allenai/dolma3-tokenizer
//   any other mix:                              allenai/gpt-neox-olmo-dolma-v1_5 ->
//                                               gpt-neox-olmo-dolma-v1_5
// (tokenizers given with their allenai/ prefix); otherwise the tokenizer identifier itself.
std::string mix_tokenizer_id(const std::string& name, const std::string& tokenizer);
// The token files of mix `name` under `root` (not checked for existence). root must be set.
Mix build_named_mix(const std::string& name, const std::string& root,
                    const std::string& tokenizer = "allenai/dolma2-tokenizer");

// build_named_mix, then every file must exist: else throws "data mix 'NAME': P of N token files
// present under data.root 'ROOT' (K tokens); first missing: PATH".
std::vector<std::string> named_mix_paths(const std::string& name, const std::string& root,
                                         const std::string& tokenizer);

// Which of `paths` exist as regular files, and their tokens (bytes / 4, uint32 files).
struct MixCensus {
  int64_t files = 0, present = 0;
  uint64_t tokens = 0;        // over the present files
  std::string first_missing;  // empty when every file is present
};
MixCensus mix_census(const std::vector<std::string>& paths);

}  // namespace olmo::data
