// `olmo ckpt SUBCOMMAND`: checkpoint tools.
//   verify DIR   recompute the layout-independent fingerprints of a checkpoint (or a run dir's
//                newest complete one) from its stored pieces and compare them with the state
//                recorded at save time (monitor/checkpoint_verify.h); exit 0 when everything
//                matches, 1 with the first mismatch named otherwise.
//   import-olmo-core SRC DST / export-olmo-core SRC DST   checkpoints between OLMo-core and
//                olmo.cpp; hf-to-olmo-core HF_DIR DST / olmo-core-to-hf SRC DST   between HF model
//                dirs and OLMo-core runs (cli/ckpt_migrate.h; OLMo-core's format read and written
//                only by its own helpers through scripts/olmo_core_ckpt.py).
#include <cstdio>
#include <string>

#include "cli_app.h"
#include "ckpt_migrate.h"
#include "command.h"
#include "monitor/checkpoint_verify.h"

namespace {

int run_ckpt(int argc, char** argv) {
  auto app = olmo::cli::make_app("ckpt", "Checkpoint tools: verify a checkpoint's saved state; "
                                         "move checkpoints between olmo.cpp, OLMo-core and HF.");
  app->require_subcommand(1);
  std::string dir;
  auto* verify = app->add_subcommand(
      "verify", "checksums, shard coverage, the model section and the fingerprints of every "
                "tensor and state section of checkpoint DIR against the state saved");
  verify->add_option("DIR", dir, "a stepN dir, or a run dir (its newest complete checkpoint)")
      ->required();
  const auto migrations = add_ckpt_migrations(*app);
  olmo::cli::parse(*app, argc, argv);
  if (verify->parsed()) {
    const olmo::train::VerifyReport rep = olmo::train::verify_checkpoint(dir);
    for (const std::string& l : rep.lines) std::printf("%s\n", l.c_str());
    std::printf("verified: %s (step %lld)\n", rep.dir.c_str(), (long long)rep.step);
    return 0;
  }
  return run_parsed_migration(migrations);
}

}  // namespace

OLMO_COMMAND("ckpt", "checkpoint tools: verify (fingerprints of the saved state), "
             "import-olmo-core, export-olmo-core, hf-to-olmo-core, olmo-core-to-hf", run_ckpt);
