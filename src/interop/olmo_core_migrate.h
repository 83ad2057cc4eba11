// Checkpoints between OLMo-core and olmo.cpp, and between Hugging Face model dirs and OLMo-core
// runs (`olmo ckpt import-olmo-core | export-olmo-core | hf-to-olmo-core | olmo-core-to-hf`).
//
// OLMo-core's format is read and written only by OLMo-core's own code, through
// scripts/olmo_core_ckpt.py (the project venv; $OLMO_PYTHON overrides), which exchanges an
// interchange dir with this side:
//   model.safetensors   weights by HF name (fp32)
//   optim.safetensors   "exp_avg/<hf>", "exp_avg_sq/<hf>" (fp32)
//   interchange.json    {"trainer": {"global_step", "tokens_seen", "loader"} (absent: a fresh
//                        start), "steps": {group: AdamW step}, "groups": {group: {"betas",
//                        "eps", "weight_decay"}}, "sections": this side's state sections}
// olmo.cpp's side is built as the trainer's own state objects (the model, AdamW, the trainer
// position, the loader state, the skip-step window) and saved / loaded through ckpt/state_io.h,
// the path the trainer's save and resume take: an imported checkpoint is the checkpoint the
// trainer would have written, fingerprints included.
// Errors name the file: not a checkpoint, another architecture (tensor names or shapes), a
// failed helper.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace olmo::train {

struct MigrateOptions {
  std::string config;                  // olmo.cpp config YAML ("" = the command's default)
  std::vector<std::string> overrides;  // key=value
};

struct MigrateResult {
  std::string out;    // what was written (a stepN dir or an HF dir)
  int64_t step = 0;
  size_t params = 0;
  std::string detail;  // one line for people
};

// OLMo-core stepN (or a run dir: its newest) -> DST/stepN (olmo.cpp). Config default: SRC's run
// dir config.yaml (as scripts/olmo_core_run.py writes it); trainer.run_dir = DST.
MigrateResult import_olmo_core(const std::string& src, const std::string& dst, const MigrateOptions& o);
// olmo.cpp checkpoint (or run dir: its newest complete) -> DST/stepN saved by OLMo-core's own
// Trainer, with DST/config.yaml. Config default: the one stored in the checkpoint.
MigrateResult export_olmo_core(const std::string& src, const std::string& dst, const MigrateOptions& o);
// HF model dir -> an OLMo-core run DST (DST/config.yaml + DST/step0: the HF weights, a fresh
// optimizer, OLMo-core's fresh trainer and data-loader state), which
// `scripts/olmo_core_run.py DST/config.yaml --run-dir DST` trains on from. Config: required (the
// run's training recipe; its model must fit the HF weights).
MigrateResult hf_to_olmo_core(const std::string& hf_dir, const std::string& dst, const MigrateOptions& o);
// OLMo-core stepN (or run dir) -> HF model dir (config.json, model.safetensors,
// generation_config.json; transformers-loadable). Config default as import.
MigrateResult olmo_core_to_hf(const std::string& src, const std::string& dst, const MigrateOptions& o);

}  // namespace olmo::train
