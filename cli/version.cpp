// cli::version_string(): the CMake project version and the git commit the binary was built from
// (olmo_version.h is written at build time by cli/version.cmake; "unknown" outside a git checkout).
#include "cli_app.h"
#include "olmo_version.h"

namespace olmo::cli {

std::string version_string() {
  return std::string("olmo.cpp ") + OLMO_VERSION + " (git " + OLMO_GIT_HASH + ")";
}

}  // namespace olmo::cli
