// Entry point of the `olmo` binary: dispatches to the registered subcommands (cli/*.cpp) and
// turns olmo::Error into a one-line message and exit code 1.
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <exception>

#include "command.h"
#include "distributed/communicator.h"
#include "core/error.h"

namespace olmo::cli {
std::vector<Command>& registry() {
  static std::vector<Command> r;
  return r;
}
}  // namespace olmo::cli

static void usage() {
  std::printf(
      "olmo.cpp: pre-train OLMo 3 language models on CPU, exactly as the reference recipe.\n\n"
      "usage: olmo <command> [args]   (olmo <command> --help for details)\n\ncommands:\n");
  auto cmds = olmo::cli::registry();
  std::sort(cmds.begin(), cmds.end(), [](auto& a, auto& b) { return a.name < b.name; });
  for (auto& c : cmds) std::printf("  %-12s %s\n", c.name.c_str(), c.summary.c_str());
}

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
      !std::strcmp(argv[1], "help")) {
    usage();
    return argc < 2 ? 1 : 0;
  }
  for (auto& c : olmo::cli::registry()) {
    if (c.name == argv[1]) {
      try {
        return c.run(argc - 1, argv + 1);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "olmo %s: error: %s\n", argv[1], e.what());
        // Under mpirun one failing rank ends the whole job at once (the others may be waiting
        // in a collective for it).
        if (olmo::dist::launched_by_mpi()) olmo::dist::world_communicator().abort(1);
        return 1;
      }
    }
  }
  std::fprintf(stderr, "olmo: unknown command '%s' (see olmo --help)\n", argv[1]);
  return 2;
}
