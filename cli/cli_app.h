// The common setup of every `olmo` command's parser (CLI11): one App per command, declared in
// its cli/<cmd>.cpp (options, types, defaults, choices, help text), parsed by cli::parse, which
// maps help and usage errors to the exit codes below and names the nearest known flag or
// subcommand for a typo (CLI11 does not suggest).
//
//   auto app = cli::make_app("audit", "offline data-loader audit of a run dir");
//   std::string run;
//   app->add_option("RUN_DIR", run, "the run directory")->required();
//   cli::parse(*app, argc, argv);  // throws cli::Exit{0 | 2} after help / a usage error
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace olmo::cli {

// Exit codes of every command (README "Exit codes", `olmo --help`). 4 (preempted: a checkpoint
// of the stop step was written) is train::kExitPreempted, used by train and launch.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;     // bad input or a runtime failure (the message says which)
inline constexpr int kExitUsage = 2;     // unknown command / flag, missing or malformed argument
inline constexpr int kExitFindings = 3;  // audit findings, compare out of tolerance / differences
// The table printed by `olmo --help` (one line per code).
const char* exit_code_table();

// Thrown by parse() to end the command with `code` (help printed: 0; usage error: 2). main.cpp
// returns it; not a std::exception, so no "error:" line is printed for it.
struct Exit {
  int code;
};

// A command's parser named "olmo NAME": unknown arguments are errors, a repeated option keeps its
// last value (as the hand-written parser did), defaults are shown in the help.
std::unique_ptr<CLI::App> make_app(const std::string& name, const std::string& description);

// Parses argv (argv[0] is the command name). No arguments at all: help on stderr, Exit{2}.
// --help / -h: help of the (sub)command on stdout, Exit{0}. A parse error: one line on stderr,
// "olmo NAME: error: ..." naming the flag (and the nearest known one for an unknown flag or
// subcommand), then Exit{2}. An option that takes a value takes the next argument even when it
// starts with '-' unless that is one of the command's own flags (--mpi-args '--mca ...').
void parse(CLI::App& app, int argc, char** argv);

// Checks of a numeric flag's value with plain messages ("'abc' is not a number", "must be > 0,
// got -1"); non-finite values are refused.
CLI::Validator positive();
CLI::Validator non_negative();

// A usage error found after parse() (flags that exclude or need each other): prints
// "olmo NAME: error: MSG (see olmo NAME --help)" on stderr and throws Exit{2}.
[[noreturn]] void usage_error(const CLI::App& app, const std::string& msg);

// The candidate nearest to `word` by edit distance (optimal string alignment: insert, delete,
// substitute, swap adjacent), or "" when none is within max(2, |word| / 3) edits and none has
// `word` as a prefix. Cost O(|word| x |candidate|) per candidate.
std::string nearest(const std::string& word, const std::vector<std::string>& candidates);

// "olmo.cpp 0.1.0 (git 1a2b3c4)": the CMake project version and the commit built (cli/version.cpp).
std::string version_string();

}  // namespace olmo::cli
