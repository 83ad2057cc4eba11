// libFuzzer target: token-id line files (`olmo logits --tokens`, src/data/token_lines.cpp).
// Every parsed id must lie in [0, vocab).
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "data/token_lines.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = olmo::fuzz::as_view(data, size);
  constexpr int64_t kVocab = 100352;
  try {
    const auto seqs = olmo::data::parse_token_lines(text, kVocab, "fuzz/tokens.txt");
    for (const auto& s : seqs) {
      if (s.empty()) std::abort();
      for (int32_t v : s)
        if (v < 0 || v >= kVocab) std::abort();
    }
  } catch (const olmo::Error& e) {
    OLMO_FUZZ_NOTE(e);
  }
  return 0;
}
