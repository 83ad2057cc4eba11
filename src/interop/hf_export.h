// Export of an OLMo 3 model as a Hugging Face model directory that
// transformers.AutoModelForCausalLM / AutoTokenizer.from_pretrained(dir) load offline:
//   config.json              Olmo3Config (config_to_hf_json, plus the special
//                            ids of the tokenizer when one is exported, and the legacy
//                            rope_scaling field: YaRN of the faithful variant, else null)
//   model.safetensors        fp32, metadata format=pt; or, when the tensors exceed
//                            max_shard_bytes, model-0000i-of-0000n.safetensors shards plus
//                            model.safetensors.index.json {"metadata":{"total_size"},"weight_map"}
//                            (tensors in HF state-dict order, a new shard when the next tensor
//                            would overflow the current one; a tensor is never split)
//   generation_config.json   eos / pad / bos ids (greedy by default, as transformers)
//   tokenizer.json           byte-level BPE (see hf_tokenizer_json below), when a tokenizer is
//   tokenizer_config.json    given; tokenizer_class PreTrainedTokenizerFast, no BOS/EOS added
// The exported weights are byte-for-byte the model's fp32 parameters, so export -> load_hf ->
// export reproduces identical files. vocab_rows < vocab_size slices embed_tokens / lm_head to
// their first rows (as OLMo-core's converter does for the 100278-token HF checkpoints).
// Errors (olmo::Error) name the directory or file: non-empty output dir without overwrite,
// vocab_rows out of range, tokenizer ids outside the model's vocabulary, I/O failures.
// Cost: one streaming write of the parameters (no copy of the model).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/progress_bar.h"
#include "model/olmo3.h"

namespace olmo::model {

// A byte-level BPE tokenizer in plain data (model/ does not depend on data/):
//   tokens[id] = token bytes for ids with a BPE rank (rank = id), "" for ids without;
//   specials = (content, id) added tokens (e.g. dolma2's 22 at 100256..100277);
//   pattern = the pre-tokenisation regex (cl100k's legacy form for dolma2).
struct HfTokenizerSpec {
  std::vector<std::string> tokens;
  std::vector<std::pair<std::string, uint32_t>> specials;
  std::string pattern;
  int64_t eos_id = -1, pad_id = -1, bos_id = -1;  // -1 = none
};

struct HfExportOptions {
  uint64_t max_shard_bytes = 5000000000ull;  // transformers' save_pretrained default, "5GB"
  int64_t vocab_rows = 0;                    // 0 = all rows of the model's vocabulary
  bool overwrite = false;                    // allow a non-empty output directory
  const HfTokenizerSpec* tokenizer = nullptr;  // nullptr: no tokenizer files
  // A bar on stderr over the tensor bytes written (core/progress_bar.h): automatic draws it only
  // when stderr is a terminal; stdout is never written.
  ProgressMode progress = ProgressMode::automatic;
};

// Writes the directory (created if missing). Returns the list of files written (names).
std::vector<std::string> export_hf(const Olmo3& m, const std::string& dir,
                                   const HfExportOptions& opt = {});

// config.json text: config_to_hf_json(c) with vocab_size = vocab_rows, special ids from `tok`
// (if given) and rope_scaling.
std::string hf_export_config_json(const ModelConfig& c, int64_t vocab_rows,
                                  const HfTokenizerSpec* tok);
std::string hf_generation_config_json(const HfTokenizerSpec* tok);

// tokenizer.json for a rank-based BPE (tiktoken semantics), written as transformers'
// TikTokenConverter does: vocab = ByteLevel string -> rank; one merge (l, r) for every way of
// splitting a token into two tokens, ordered by (rank(token), rank(l), rank(r));
// ignore_merges = true (a pre-token that is a token is taken whole, as tiktoken does);
// Sequence[Split(pattern, Isolated), ByteLevel(use_regex=false)] pre-tokenizer, ByteLevel
// decoder; specials as added tokens (special, not normalized).
std::string hf_tokenizer_json(const HfTokenizerSpec& t);
std::string hf_tokenizer_config_json(const HfTokenizerSpec& t, int64_t model_max_length);

}  // namespace olmo::model
