// OLMo-core's named data mixes (see named_mix.h).
#include "data/named_mix.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "core/error.h"
#include "core/file_io.h"
#include "core/runtime.h"

namespace fs = std::filesystem;

namespace olmo::data {

namespace {

struct Alias {
  const char* alias;
  const char* name;
};
constexpr Alias kAliases[] = {{"dolma3-0625-6T-mix", "OLMo-mix-0625"},
                              {"dolma3-0925-6T-mix", "OLMo-mix-0925"},
                              {"dolma3-0925-150B-mix", "OLMo-mix-0625-150Bsample"}};

std::string strip(const std::string& s) {  // Python str.strip() on ASCII whitespace
  size_t a = s.find_first_not_of(" \t\r\n\f\v");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r\n\f\v") - a + 1);
}

std::string joined_names() {
  std::string s;
  for (auto& n : known_mix_names()) s += (s.empty() ? "" : ", ") + n;
  for (auto& a : kAliases) s += cat(", ", a.alias, " (= ", a.name, ")");
  return s;
}

}  // namespace

std::string named_mix_dir() {
  return runtime().env_or_default("mixes_dir", "OLMO_MIXES_DIR",
                                  std::string(OLMO_SOURCE_DIR) + "/configs/mixes/olmo-core-3.0.0");
}

std::vector<std::string> known_mix_names() {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(named_mix_dir(), ec))
    if (e.is_regular_file() && e.path().extension() == ".txt")
      out.push_back(e.path().stem().string());
  std::sort(out.begin(), out.end());
  return out;
}

bool looks_like_mix_name(const std::string& value) {
  if (value.empty() || value.find('/') != std::string::npos) return false;
  if (fs::path(value).has_extension()) return false;
  std::error_code ec;
  return !fs::exists(value, ec);
}

std::string canonical_mix_name(const std::string& name) {
  for (auto& a : kAliases)
    if (name == a.alias) return a.name;
  auto names = known_mix_names();
  OLMO_CHECK(!names.empty(), "data mix '", name, "': no mix lists in ", named_mix_dir(),
             " (the vendored OLMo-core mixes; OLMO_MIXES_DIR overrides the folder)");
  OLMO_CHECK(std::find(names.begin(), names.end(), name) != names.end(), "unknown data mix '",
             name, "' (not a file or directory either); known mixes (OLMo-core 3.0.0): ",
             joined_names());
  return name;
}

std::string mix_tokenizer_id(const std::string& name, const std::string& tokenizer) {
  const std::string dolma2 = "allenai/dolma2-tokenizer";
  const std::string neox = "allenai/gpt-neox-olmo-dolma-v1_5";
  if (name == "v3-small-ppl-validation" || name == "c4-ppl-validation") {
    if (tokenizer == neox) return "gptneox20b";
    if (tokenizer == dolma2) return "dolma2-tokenizer";
    return tokenizer;
  }
  if (name == "code-fresh-ppl-validation")
    return tokenizer == dolma2 ? "dolma2-tokenizer" : tokenizer;
  if (name == "OLMo-mix-0625")
    return tokenizer == "allenai/dolma2-tokenizer-sigdig" ? "dolma2-tokenizer-sigdig" : tokenizer;
  static const char* kOlmo3[] = {"OLMo-mix-0625-official",
                                 "OLMo-mix-0925-official",
                                 "OLMo-midtraining-mix-0625-100B",
                                 "OLMo-midtraining-mix-0925-ingredient1-100B",
                                 "OLMo-midtraining-mix-0925-ingredient2-100B",
                                 "OLMo-longmino-mix-0625",
                                 "OLMo-longmino-mix-0925"};
  for (const char* n : kOlmo3)
    if (name == n) return tokenizer == dolma2 ? "allenai/dolma3-tokenizer" : tokenizer;
  return tokenizer == neox ? "gpt-neox-olmo-dolma-v1_5" : tokenizer;
}

Mix build_named_mix(const std::string& name_in, const std::string& root,
                    const std::string& tokenizer) {
  const std::string name = canonical_mix_name(name_in);
  OLMO_CHECK(!root.empty(), "data mix '", name, "' is a list of paths relative to a data root: "
             "set data.root (OLMo-core's base_dir, e.g. a local copy of https://olmo-data.org/)");
  const std::string file = named_mix_dir() + "/" + name + ".txt";
  const std::string tok = mix_tokenizer_id(name, tokenizer);
  const std::string base = root.back() == '/' ? root : root + "/";
  std::istringstream in(read_file(file));
  Mix mix;
  std::string raw;
  for (int line_no = 1; std::getline(in, raw); ++line_no) {
    std::string line = strip(raw);
    if (line.empty() || line[0] == '#') continue;
    size_t comma = line.find(',');
    OLMO_CHECK(comma != std::string::npos && line.find(',', comma + 1) == std::string::npos, file,
               ":", line_no, ": expected 'label,path', got '", line, "'");
    std::string path = line.substr(comma + 1);
    OLMO_CHECK(path.find("{TOKENIZER}") != std::string::npos, file, ":", line_no,
               ": line in data mix '", name, "' is invalid (no {TOKENIZER} in its path)");
    for (size_t p; (p = path.find("{TOKENIZER}")) != std::string::npos;) path.replace(p, 11, tok);
    mix.labels.push_back(line.substr(0, comma));
    mix.paths.push_back(base + path);
  }
  OLMO_CHECK(!mix.paths.empty(), file, ": data mix '", name, "' lists no token files");
  return mix;
}

std::vector<std::string> named_mix_paths(const std::string& name, const std::string& root,
                                         const std::string& tokenizer) {
  Mix m = build_named_mix(name, root, tokenizer);
  MixCensus n = mix_census(m.paths);
  OLMO_CHECK(n.present == n.files, "data mix '", canonical_mix_name(name), "': ", n.present,
             " of ", n.files, " token files present under data.root '", root, "' (", n.tokens,
             " tokens); first missing: ", n.first_missing);
  return m.paths;
}

MixCensus mix_census(const std::vector<std::string>& paths) {
  MixCensus c;
  c.files = int64_t(paths.size());
  for (auto& p : paths) {
    std::error_code ec;
    auto st = fs::status(p, ec);
    if (!ec && fs::is_regular_file(st)) {
      ++c.present;
      c.tokens += fs::file_size(p, ec) / 4;
    } else if (c.first_missing.empty()) {
      c.first_missing = p;
    }
  }
  return c;
}

}  // namespace olmo::data
