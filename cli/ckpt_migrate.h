// Checkpoint migration for `olmo ckpt` (train/olmo_core_migrate.h does the work):
//   olmo ckpt import-olmo-core SRC DST      OLMo-core checkpoint -> olmo.cpp checkpoint DST/stepN
//   olmo ckpt export-olmo-core SRC DST      olmo.cpp checkpoint -> OLMo-core checkpoint DST/stepN
//   olmo ckpt hf-to-olmo-core HF_DIR DST    HF model dir -> OLMo-core run DST (config + step0)
//   olmo ckpt olmo-core-to-hf SRC DST_HF    OLMo-core checkpoint -> HF model dir
// argv[0] is the subcommand name; the return value the exit code.
#pragma once

int run_ckpt_import_olmo_core(int argc, char** argv);
int run_ckpt_export_olmo_core(int argc, char** argv);
int run_ckpt_hf_to_olmo_core(int argc, char** argv);
int run_ckpt_olmo_core_to_hf(int argc, char** argv);
