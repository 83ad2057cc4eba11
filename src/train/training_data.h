// The training data a config names (data.mix, data.root, data.tokenizer, data.dataset ...), one
// resolution shared by the trainer, `olmo train --dry-run` and `olmo audit`:
//   data.mix = an OLMo-core mix name (data/named_mix.h: OLMo-mix-0625-official ...) -> its token
//              files under data.root, {TOKENIZER} as DataMix.build with data.tokenizer;
//            = a .mix file -> its `label,path` lines, relative paths against data.root when set,
//              else against the mix file's directory (data/mix.h, its {TOKENIZER} rule);
//            = a directory (its *.npy, sorted) or one token file.
// training_paths() throws when a file is missing: for a named mix with the count present and
// the first missing path ("3 of 1016 token files present under DIR; first missing: PATH").
#pragma once
#include <string>
#include <vector>

#include "data/instance_source.h"
#include "data/named_mix.h"
#include "train/config.h"

namespace olmo::train {

std::vector<std::string> training_paths(const Config& c);

// A named mix's files and what of them is on disk (no throw for missing files; an unknown name
// or an unset data.root throws). Empty `name` when data.mix is not a mix name.
struct NamedMixStatus {
  std::string name;  // canonical
  std::vector<std::string> paths;
  data::MixCensus census;
};
NamedMixStatus named_mix_status(const Config& c);

// The dataset of the config over training_paths(c) (data.dataset, eos/pad ids, source groups,
// permutation seed); `vocab_size` is the model's.
data::DatasetSpec dataset_spec(const Config& c, uint32_t vocab_size);

}  // namespace olmo::train
