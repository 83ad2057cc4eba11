// Token-data path expansion (see token_paths.h).
#include "data/token_paths.h"

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "data/mix.h"

namespace fs = std::filesystem;

namespace olmo::data {

std::vector<std::string> expand_token_paths(const std::string& path) {
  OLMO_CHECK(fs::exists(path), "token data not found: ", path);
  std::vector<std::string> out;
  if (fs::is_directory(path)) {
    for (auto& e : fs::directory_iterator(path))
      if (e.is_regular_file() && e.path().extension() == ".npy") out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    OLMO_CHECK(!out.empty(), path, ": directory holds no .npy token files");
  } else if (fs::path(path).extension() == ".mix") {
    out = load_mix(path).paths;
  } else {
    out.push_back(path);
  }
  return out;
}

}  // namespace olmo::data
