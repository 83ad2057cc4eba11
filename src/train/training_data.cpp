// Training data of a config (see training_data.h).
#include "train/training_data.h"

#include <filesystem>

#include "core/error.h"
#include "data/mix.h"
#include "data/token_paths.h"

namespace fs = std::filesystem;

namespace olmo::train {

NamedMixStatus named_mix_status(const Config& c) {
  NamedMixStatus s;
  if (!data::looks_like_mix_name(c.data.mix)) return s;
  s.name = data::canonical_mix_name(c.data.mix);
  s.paths = data::build_named_mix(s.name, c.data.root, c.data.tokenizer).paths;
  s.census = data::mix_census(s.paths);
  return s;
}

std::vector<std::string> training_paths(const Config& c) {
  const std::string& m = c.data.mix;
  OLMO_CHECK(!m.empty(), "data.mix is empty: name a mix, a mix file, a directory or a file");
  if (data::looks_like_mix_name(m)) return data::named_mix_paths(m, c.data.root, c.data.tokenizer);
  if (fs::path(m).extension() == ".mix" && !c.data.root.empty())
    return data::load_mix(m, c.data.root).paths;
  return data::expand_token_paths(m);
}

data::DatasetSpec dataset_spec(const Config& c, uint32_t vocab_size) {
  data::DatasetSpec spec;
  spec.kind = choice_name(c.data.dataset);
  spec.paths = training_paths(c);
  spec.seq_len = c.data.seq_len;
  spec.vocab_size = vocab_size;
  spec.eos_id = c.data.eos_id;
  spec.pad_id = c.data.pad_id;
  spec.source_group_size = c.data.source_group_size;
  spec.permutation_seed = uint64_t(c.data.source_permutation_seed);
  return spec;
}

}  // namespace olmo::train
