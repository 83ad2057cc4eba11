// The migration subcommands of `olmo ckpt` (interop/olmo_core_migrate.h does the work):
//   olmo ckpt import-olmo-core SRC DST      OLMo-core checkpoint -> olmo.cpp checkpoint DST/stepN
//   olmo ckpt export-olmo-core SRC DST      olmo.cpp checkpoint -> OLMo-core checkpoint DST/stepN
//   olmo ckpt hf-to-olmo-core HF_DIR DST    HF model dir -> OLMo-core run DST (config + step0)
//   olmo ckpt olmo-core-to-hf SRC DST_HF    OLMo-core checkpoint -> HF model dir
// each with [--config CONFIG.yaml] [key=value ...].
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "interop/olmo_core_migrate.h"

struct CkptMigration {
  CLI::App* sub = nullptr;
  std::string src, dst;
  olmo::train::MigrateOptions opt;
  olmo::train::MigrateResult (*run)(const std::string&, const std::string&,
                                    const olmo::train::MigrateOptions&) = nullptr;
};

// Declares the four subcommands on `ckpt` (their arguments land in the returned objects).
std::vector<std::unique_ptr<CkptMigration>> add_ckpt_migrations(CLI::App& ckpt);
// Runs the one that was parsed and prints the outcome; returns the exit code, or -1 when none
// of them was selected.
int run_parsed_migration(const std::vector<std::unique_ptr<CkptMigration>>& ms);
