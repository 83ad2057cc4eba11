// libFuzzer target: the YAML training config (src/train/config.cpp, load_config + validate +
// to_yaml). The bytes are the config file; when the first line is "#= key=value" that override
// is applied too (apply_override). Only olmo::Error may come out.
#include <string>

#include "core/error.h"
#include "fuzz_util.h"
#include "train/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = olmo::fuzz::as_view(data, size);
  std::vector<std::string> overrides;
  if (text.substr(0, 3) == "#= ") {
    const size_t nl = text.find('\n');
    overrides.emplace_back(text.substr(3, nl == std::string_view::npos ? nl : nl - 3));
  }
  const std::string path = olmo::fuzz::write_scratch("config.yaml", text);
  try {
    olmo::train::Config c = olmo::train::load_config(path, overrides);
    const std::string printed = olmo::train::to_yaml(c);
    olmo::train::validate(c, /*check_files=*/false);
  } catch (const olmo::Error& e) {
    OLMO_FUZZ_NOTE(e);
  }
  return 0;
}
