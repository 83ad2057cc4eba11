// `olmo ckpt SUBCOMMAND`: checkpoint tools.
//   verify DIR   recompute the layout-independent fingerprints of a checkpoint (or a run dir's
//                newest complete one) from its stored pieces and compare them with the state
//                recorded at save time (train/checkpoint_verify.h); exit 0 when everything
//                matches, 1 with the first mismatch named otherwise.
//   import-olmo-core SRC DST / export-olmo-core SRC DST   checkpoints between OLMo-core and
//                olmo.cpp; hf-to-olmo-core HF_DIR DST / olmo-core-to-hf SRC DST   between HF model
//                dirs and OLMo-core runs (cli/ckpt_migrate.h; OLMo-core's format read and written
//                only by its own helpers through scripts/olmo_core_ckpt.py).
#include <cstdio>
#include <cstring>
#include <string>

#include "ckpt_migrate.h"
#include "command.h"
#include "train/checkpoint_verify.h"

namespace {

int usage(FILE* to) {
  std::fprintf(to,
               "usage: olmo ckpt verify DIR\n"
               "       olmo ckpt import-olmo-core SRC DST [--config CONFIG.yaml] [key=value ...]\n"
               "       olmo ckpt export-olmo-core SRC DST [--config CONFIG.yaml] [key=value ...]\n"
               "       olmo ckpt hf-to-olmo-core HF_DIR DST_RUN --config CONFIG.yaml [key=value ...]\n"
               "       olmo ckpt olmo-core-to-hf SRC DST_HF [--config CONFIG.yaml] [key=value ...]\n"
               "  verify DIR  checksums, shard coverage, the model section and the fingerprints of\n"
               "              every tensor and state section of checkpoint DIR (a stepN dir, or a run\n"
               "              dir: its newest complete checkpoint) against the state saved\n");
  return to == stdout ? 0 : 2;
}

int run_ckpt(int argc, char** argv) {
  if (argc < 2) return usage(stderr);
  const std::string sub = argv[1];
  if (sub == "--help" || sub == "-h") return usage(stdout);
  if (sub == "verify") {
    if (argc != 3 || std::strncmp(argv[2], "--", 2) == 0) return usage(argc == 3 ? stdout : stderr);
    const olmo::train::VerifyReport rep = olmo::train::verify_checkpoint(argv[2]);
    for (const std::string& l : rep.lines) std::printf("%s\n", l.c_str());
    std::printf("verified: %s (step %lld)\n", rep.dir.c_str(), (long long)rep.step);
    return 0;
  }
  if (sub == "import-olmo-core") return run_ckpt_import_olmo_core(argc - 1, argv + 1);
  if (sub == "export-olmo-core") return run_ckpt_export_olmo_core(argc - 1, argv + 1);
  if (sub == "hf-to-olmo-core") return run_ckpt_hf_to_olmo_core(argc - 1, argv + 1);
  if (sub == "olmo-core-to-hf") return run_ckpt_olmo_core_to_hf(argc - 1, argv + 1);
  std::fprintf(stderr, "olmo ckpt: unknown subcommand '%s'\n", sub.c_str());
  return usage(stderr);
}

}  // namespace

OLMO_COMMAND("ckpt", "checkpoint tools: verify (fingerprints of the saved state), "
             "import-olmo-core, export-olmo-core, hf-to-olmo-core, olmo-core-to-hf", run_ckpt);
