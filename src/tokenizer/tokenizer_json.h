// Reader of Hugging Face `tokenizer.json` files for byte-level BPE (GPT-2 / cl100k style):
// model.type "BPE" with vocab and merges over the ByteLevel alphabet, no normalizer, and a
// pre_tokenizer that is either Sequence[Split(Regex), ByteLevel(use_regex=false)] or
// ByteLevel(use_regex=true) (GPT-2 pattern). Anything else is rejected with an olmo::Error that
// names the file and the JSON key, rather than silently tokenising differently.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace olmo::tokenizer {

struct HfBpeFile {
  std::vector<std::string> tokens;  // id -> token bytes ("" = id not in the BPE vocab)
  std::vector<std::pair<uint32_t, uint32_t>> merges;  // in priority order
  bool ignore_merges = false;
  std::string pattern;    // pre-tokenisation regex
  bool keep_gaps = true;  // Split behaviour Isolated (true) or Removed+invert (false)
  std::vector<std::pair<std::string, uint32_t>> added;  // added_tokens (content, id)
};

HfBpeFile read_tokenizer_json(const std::string& path);

// GPT-2's byte -> printable code point map (bytes_to_unicode) and its inverse (-1 = none).
uint32_t byte_to_unicode(uint8_t b);
int unicode_to_byte(uint32_t cp);

}  // namespace olmo::tokenizer
