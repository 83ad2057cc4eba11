// Checkpoint migration between OLMo-core and olmo.cpp (issue 19), for `olmo ckpt`:
//   olmo ckpt import-olmo-core SRC DST   OLMo-core checkpoint -> olmo.cpp checkpoint DST/stepN
//   olmo ckpt export-olmo-core SRC DST   olmo.cpp checkpoint -> OLMo-core checkpoint DST/stepN
// Both read and write OLMo-core's format only through scripts/olmo_core_ckpt.py (OLMo-core's own
// helpers, the project venv). argv[0] is the subcommand name; the return value the exit code.
#pragma once

int run_ckpt_import_olmo_core(int argc, char** argv);
int run_ckpt_export_olmo_core(int argc, char** argv);
