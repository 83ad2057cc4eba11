// libFuzzer target: Hugging Face config.json (src/model/config.cpp, config_from_hf_json_text).
// A config that parses must also survive config_to_hf_json and parse back to the same
// architecture (a round trip that throws or differs aborts: a finding).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "fuzz_util.h"
#include "model/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(olmo::fuzz::as_view(data, size));
  olmo::model::ModelConfig c;
  try {
    c = olmo::model::config_from_hf_json_text(text, "fuzz/config.json");
  } catch (const olmo::Error& e) {
    OLMO_FUZZ_NOTE(e);
    return 0;
  }
  const std::string back = olmo::model::config_to_hf_json(c);
  olmo::model::ModelConfig c2;
  try {
    c2 = olmo::model::config_from_hf_json_text(back, "fuzz/roundtrip.json");
  } catch (const olmo::Error& e) {
    std::fprintf(stderr, "round trip failed: %s\n%s\n", e.what(), back.c_str());
    std::abort();
  }
  if (c2.d_model != c.d_model || c2.n_layers != c.n_layers || c2.n_heads != c.n_heads ||
      c2.n_kv_heads != c.n_kv_heads || c2.vocab_size != c.vocab_size ||
      c2.ffn_hidden != c.ffn_hidden || c2.layer_window != c.layer_window) {
    std::fprintf(stderr, "round trip changed the architecture:\n%s\n", back.c_str());
    std::abort();
  }
  return 0;
}
