// Subcommand registry of the `olmo` binary. Each cli/<name>.cpp defines one subcommand and
// registers it with a static OLMO_COMMAND(...) so that adding a command touches no shared file.
// run() receives argv without the program name: argv[0] is the subcommand name.
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace olmo::cli {

struct Command {
  std::string name;      // e.g. "info"
  std::string summary;   // one line for `olmo --help`
  std::function<int(int argc, char** argv)> run;  // returns the exit code
};

std::vector<Command>& registry();

struct Registrar {
  explicit Registrar(Command c) { registry().push_back(std::move(c)); }
};

}  // namespace olmo::cli

#define OLMO_CLI_CONCAT2(a, b) a##b
#define OLMO_CLI_CONCAT(a, b) OLMO_CLI_CONCAT2(a, b)
// OLMO_COMMAND("name", "summary", fn) where fn is int(int, char**).
#define OLMO_COMMAND(name, summary, fn) \
  static ::olmo::cli::Registrar OLMO_CLI_CONCAT(olmo_cmd_, __LINE__)({name, summary, fn})
