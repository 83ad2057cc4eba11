// libFuzzer target: Hugging Face tokenizer.json (src/tokenizer/tokenizer_json.cpp through
// Tokenizer::load). A file that loads must encode and decode a fixed text (and the fuzz bytes
// themselves) without crashing; decode(encode(x)) == x for any input text.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "fuzz_util.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes = olmo::fuzz::as_view(data, size);
  const std::string path = olmo::fuzz::write_scratch("tokenizer.json", bytes);
  olmo::tokenizer::TokenizerOptions opt;
  opt.expected_sha256 = "none";
  try {
    auto t = olmo::tokenizer::Tokenizer::load(path, opt);
    for (std::string_view text : {std::string_view("Hello world, 12345 <|endoftext|>\n\tx"),
                                  bytes.substr(0, 256)}) {
      const auto ids = t.encode(text);
      const std::string back = t.decode(ids);
      if (back != text) {
        std::fprintf(stderr, "decode(encode(x)) != x\n");
        std::abort();
      }
    }
  } catch (const olmo::Error& e) {
    OLMO_FUZZ_NOTE(e);
  }
  return 0;
}
