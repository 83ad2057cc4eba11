// Mix-file parser (see mix.h).
#include "data/mix.h"

#include <filesystem>
#include <sstream>

#include "core/error.h"
#include "core/file_io.h"

namespace olmo::data {

static std::string strip(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r\n\f\v");
  if (a == std::string::npos) return "";
  size_t b = s.find_last_not_of(" \t\r\n\f\v");
  return s.substr(a, b - a + 1);
}

Mix load_mix(const std::string& mix_file, const std::string& data_root,
             const std::string& tokenizer_id, bool check_exists) {
  namespace fs = std::filesystem;
  OLMO_CHECK(file_exists(mix_file), mix_file, ": mix file not found");
  std::string text = read_file(mix_file);
  fs::path root = data_root.empty() ? fs::path(mix_file).parent_path() : fs::path(data_root);
  Mix mix;
  std::istringstream in(text);
  std::string raw;
  for (int line_no = 1; std::getline(in, raw); ++line_no) {
    std::string line = strip(raw);
    if (line.empty() || line[0] == '#') continue;
    size_t comma = line.find(',');
    OLMO_CHECK(comma != std::string::npos && line.find(',', comma + 1) == std::string::npos,
               mix_file, ":", line_no, ": expected 'label,path', got '", line, "'");
    std::string label = strip(line.substr(0, comma)), path = strip(line.substr(comma + 1));
    OLMO_CHECK(!label.empty() && !path.empty(), mix_file, ":", line_no,
               ": empty label or path in '", line, "'");
    for (size_t p; (p = path.find("{TOKENIZER}")) != std::string::npos;)
      path.replace(p, 11, tokenizer_id);
    std::string full = fs::path(path).is_absolute() ? path : (root / path).string();
    OLMO_CHECK(!check_exists || file_exists(full), mix_file, ":", line_no, ": token file '", full,
               "' (path '", path, "') not found");
    mix.labels.push_back(label);
    mix.paths.push_back(full);
  }
  OLMO_CHECK(!mix.paths.empty(), mix_file, ": mix file lists no token files");
  return mix;
}

}  // namespace olmo::data
