// libFuzzer target: Dolma JSONL documents (src/corpus/jsonl.cpp). The first byte picks the file
// name the rest is written under: .jsonl, .jsonl.gz (raw bytes, so the gzip reader is fuzzed),
// .jsonl.zst, or .jsonl with the bytes gzip-compressed by the harness (so the JSONL parser behind
// the decompressor is reached); documents are read strictly and with skip_bad_lines. Each
// line is also fed to parse_document_line directly.
#include <string>

#include "core/error.h"
#include "corpus/jsonl.h"
#include "corpus/token_file.h"
#include "fuzz_util.h"

namespace c = olmo::corpus;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int mode = data[0] & 3;
  const std::string_view body = olmo::fuzz::as_view(data + 1, size - 1);
  std::string path;
  switch (mode) {
    case 0: path = olmo::fuzz::write_scratch("docs.jsonl", body); break;
    case 1: path = olmo::fuzz::write_scratch("docs.jsonl.gz", body); break;
    case 2: path = olmo::fuzz::write_scratch("docs.jsonl.zst", body); break;
    default:
      path = olmo::fuzz::write_scratch("docs.jsonl.gz", c::gzip_compress(std::string(body), 1));
  }
  for (bool skip : {false, true}) {
    try {
      c::JsonlOptions opt;
      opt.skip_bad_lines = skip;
      c::DocumentReader r(path, opt);
      c::Document d;
      while (r.next(d)) {
        std::string text = d.text;
        c::sanitize_utf8(text);
        d.text = text;
        (void)c::document_to_json_line(d);
      }
    } catch (const olmo::Error& e) {
      OLMO_FUZZ_NOTE(e);
    }
  }
  if (mode == 0) {
    size_t pos = 0;
    while (pos <= body.size()) {
      size_t nl = body.find('\n', pos);
      if (nl == std::string_view::npos) nl = body.size();
      c::Document d;
      (void)c::parse_document_line(body.substr(pos, nl - pos), d);
      pos = nl + 1;
    }
  }
  return 0;
}
