// libFuzzer target: OpenAI .tiktoken rank files (src/tokenizer/tokenizer.cpp read_tiktoken and
// BpeModel::from_ranks through Tokenizer::load). A file that loads must round-trip text through
// encode/decode.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "fuzz_util.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes = olmo::fuzz::as_view(data, size);
  const std::string path = olmo::fuzz::write_scratch("ranks.tiktoken", bytes);
  olmo::tokenizer::TokenizerOptions opt;
  opt.expected_sha256 = "none";
  try {
    auto t = olmo::tokenizer::Tokenizer::load(path, opt);
    for (std::string_view text : {std::string_view("abcab a xyz 12345 \xFF\xC0!"),
                                  bytes.substr(0, 128)}) {
      const auto ids = t.encode(text);
      if (t.decode(ids) != text) {
        std::fprintf(stderr, "decode(encode(x)) != x\n");
        std::abort();
      }
    }
  } catch (const olmo::Error& e) {
    OLMO_FUZZ_NOTE(e);
  }
  return 0;
}
