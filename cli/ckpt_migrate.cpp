// `olmo ckpt import-olmo-core | export-olmo-core | hf-to-olmo-core | olmo-core-to-hf` (see
// ckpt_migrate.h): parses the arguments and prints the outcome; the work is
// train/olmo_core_migrate.h (OLMo-core's side through scripts/olmo_core_ckpt.py, olmo.cpp's side
// through the trainer's own state objects and ckpt/state_io.h).
#include "ckpt_migrate.h"

#include <cstdio>
#include <string>
#include <vector>

#include "args.h"
#include "train/olmo_core_migrate.h"

namespace {

using olmo::train::MigrateOptions;
using olmo::train::MigrateResult;

struct Migration {
  const char* usage;  // after "usage: olmo ckpt "
  const char* what;   // one line
  MigrateResult (*run)(const std::string&, const std::string&, const MigrateOptions&);
};

int run_migration(int argc, char** argv, const Migration& m) {
  olmo::cli::Args a(argc, argv);
  if (a.has("--help") || a.positional().size() < 2) {
    std::printf("usage: olmo ckpt %s\n%s\n", m.usage, m.what);
    return a.has("--help") ? 0 : 1;
  }
  a.finish({"--config"});
  MigrateOptions o;
  if (a.has("--config")) o.config = a.get("--config");
  o.overrides.assign(a.positional().begin() + 2, a.positional().end());
  const MigrateResult r = m.run(a.positional()[0], a.positional()[1], o);
  std::printf("%s: %s -> %s (step %lld, %zu parameters%s%s)\n", argv[0], a.positional()[0].c_str(),
              r.out.c_str(), (long long)r.step, r.params, r.detail.empty() ? "" : ", ",
              r.detail.c_str());
  return 0;
}

}  // namespace

int run_ckpt_import_olmo_core(int argc, char** argv) {
  return run_migration(argc, argv,
                       {"import-olmo-core SRC DST [--config CONFIG.yaml] [key=value ...]",
                        "OLMo-core checkpoint SRC (stepN or its run dir) -> olmo.cpp checkpoint "
                        "DST/stepN (config default: SRC's run dir config.yaml)",
                        olmo::train::import_olmo_core});
}

int run_ckpt_export_olmo_core(int argc, char** argv) {
  return run_migration(argc, argv,
                       {"export-olmo-core SRC DST [--config CONFIG.yaml] [key=value ...]",
                        "olmo.cpp checkpoint SRC (stepN or its run dir) -> OLMo-core checkpoint "
                        "DST/stepN (config default: the one stored in SRC)",
                        olmo::train::export_olmo_core});
}

int run_ckpt_hf_to_olmo_core(int argc, char** argv) {
  return run_migration(argc, argv,
                       {"hf-to-olmo-core HF_DIR DST_RUN --config CONFIG.yaml [key=value ...]",
                        "Hugging Face model dir -> OLMo-core run DST_RUN (config.yaml + step0: the "
                        "HF weights, a fresh optimizer); scripts/olmo_core_run.py trains on from it",
                        olmo::train::hf_to_olmo_core});
}

int run_ckpt_olmo_core_to_hf(int argc, char** argv) {
  return run_migration(argc, argv,
                       {"olmo-core-to-hf SRC DST_HF [--config CONFIG.yaml] [key=value ...]",
                        "OLMo-core checkpoint SRC (stepN or its run dir) -> Hugging Face model dir "
                        "DST_HF (config default: SRC's run dir config.yaml)",
                        olmo::train::olmo_core_to_hf});
}
