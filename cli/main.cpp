// Entry point of the `olmo` binary: dispatches to the registered subcommands (cli/*.cpp), prints
// the top-level help (commands, exit codes) and --version, names the nearest command for a typo,
// and turns an exception into a one-line message and exit code 1 (cli_app.h: the exit codes).
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "cli_app.h"
#include "command.h"
#include "core/error.h"
#include "distributed/communicator.h"

namespace olmo::cli {
std::vector<Command>& registry() {
  static std::vector<Command> r;
  return r;
}
}  // namespace olmo::cli

namespace {

void usage(FILE* to) {
  std::fprintf(to,
               "olmo.cpp: pre-train OLMo 3 language models on CPU, exactly as the reference "
               "recipe.\n\n"
               "usage: olmo <command> [args]    olmo help <command> | olmo <command> --help\n"
               "       olmo --version\n\ncommands:\n");
  auto cmds = olmo::cli::registry();
  std::sort(cmds.begin(), cmds.end(), [](auto& a, auto& b) { return a.name < b.name; });
  for (auto& c : cmds) std::fprintf(to, "  %-16s %s\n", c.name.c_str(), c.summary.c_str());
  std::fprintf(to, "\nexit codes (every command):\n%s", olmo::cli::exit_code_table());
}

const olmo::cli::Command* find(const std::string& name) {
  for (auto& c : olmo::cli::registry())
    if (c.name == name) return &c;
  return nullptr;
}

int unknown_command(const std::string& name) {
  std::vector<std::string> names;
  for (auto& c : olmo::cli::registry()) names.push_back(c.name);
  const std::string near = olmo::cli::nearest(name, names);
  std::fprintf(stderr, "olmo: error: unknown %s '%s'%s (see olmo --help)\n",
               name.rfind('-', 0) == 0 ? "flag" : "command", name.c_str(),
               near.empty() ? "" : (" (did you mean '" + near + "'?)").c_str());
  return olmo::cli::kExitUsage;
}

int run(const olmo::cli::Command& c, int argc, char** argv) {
  try {
    return c.run(argc, argv);
  } catch (const olmo::cli::Exit& e) {
    return e.code;
  } catch (const olmo::UsageError& e) {  // a malformed key=value (every rank sees the same one)
    std::fprintf(stderr, "olmo %s: error: %s (see olmo %s --help)\n", c.name.c_str(), e.what(),
                 c.name.c_str());
    return olmo::cli::kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "olmo %s: error: %s\n", c.name.c_str(), e.what());
    // Under mpirun one failing rank ends the whole job at once (the others may be waiting
    // in a collective for it).
    if (olmo::dist::launched_by_mpi()) olmo::dist::world_communicator().abort(1);
    return olmo::cli::kExitError;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return olmo::cli::kExitUsage;
  }
  const std::string first = argv[1];
  if (first == "--help" || first == "-h" || (first == "help" && argc == 2)) {
    usage(stdout);
    return olmo::cli::kExitOk;
  }
  if (first == "--version") {
    std::printf("%s\n", olmo::cli::version_string().c_str());
    return olmo::cli::kExitOk;
  }
  if (first == "help") {  // olmo help CMD == olmo CMD --help
    if (argc > 3) {
      std::fprintf(stderr, "olmo help: error: give one command (see olmo --help)\n");
      return olmo::cli::kExitUsage;
    }
    const olmo::cli::Command* c = find(argv[2]);
    if (!c) return unknown_command(argv[2]);
    std::string name = c->name, help = "--help";
    char* args[] = {name.data(), help.data(), nullptr};
    return run(*c, 2, args);
  }
  const olmo::cli::Command* c = find(first);
  return c ? run(*c, argc - 1, argv + 1) : unknown_command(first);
}
