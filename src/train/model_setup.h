// From the training config's `model:` section (plus data.seq_len) to a model::ModelConfig:
// start from the preset (if any), apply the explicit fields, expand window_pattern to one window
// per layer (-1 -> 0 = full causal; force_full_first/last), max_seq_len = data.seq_len.
// Errors name the config key. model.yarn_* (stage 3) map onto ModelConfig::yarn (factor 0 =
// none; factor <= 1 otherwise, or an old context longer than data.seq_len, is an error);
// model.yarn_variant faithful | hf.
// Hardware-independent: model_config() never probes the CPU. ModelConfig::precision is
// model.precision as written (fp32 | bf16_mixed), with `auto` left as fp32 (unresolved): what
// reads weights, counts parameters or exports needs no more. Commands that train or benchmark
// call model_config_for_this_cpu(), the one place precision is decided (choose_precision).
#pragma once
#include <string>
#include <vector>

#include "model/config.h"
#include "train/config.h"

namespace olmo::train {

model::ModelConfig model_config(const Config& c);

// model_config(c) with ModelConfig::precision = choose_precision(c, resumed).precision (may run
// the GEMM probe; throws on bf16_mixed where bf16 is unusable).
model::ModelConfig model_config_for_this_cpu(const Config& c, const std::string& resumed = "");

// The precision the run in c.trainer.run_dir trained in: "fp32" or "bf16_mixed" from the recipe of
// its latest complete checkpoint (ckpt::latest_complete), or "" when there is none (a fresh run,
// or a checkpoint of an older olmo.cpp without a recipe). Reads one JSON section; no probe.
std::string resumed_precision(const Config& c);

// The key=value overrides that express `mc` in the YAML `model:` section (plus data.seq_len for
// max_seq_len and the top-level name): model_config() of a config with them applied gives `mc`
// back, every field of model/config_fields.h included (tests/train/model_config_roundtrip_test.cpp).
std::vector<std::string> model_overrides(const model::ModelConfig& mc);

// model.precision resolved for this CPU, and why. fp32: always. bf16_mixed: refused (an
// olmo::Error naming the config file and key) unless kernels::bf16_usable() (native bf16, or
// OLMO_BF16=emulate). auto on a resume (`resumed` = resumed_precision(c), non-empty): the
// checkpoint's precision, never a new probe: a timing must not decide a resumed run's bits (a
// bf16_mixed checkpoint on a CPU without native bf16 is refused like an explicit bf16_mixed,
// naming OLMO_BF16=emulate, which continues its trajectory). auto otherwise: bf16_mixed
// when the CPU has AVX512_BF16 and kernels::probe_gemm_precisions() measures the training GEMMs'
// bf16 path (gemm_micro_bf16) at least 1.1x the fp32 one (gemm_micro), else fp32. The probe runs
// once per process (~0.1 s; the result is
// cached) and the choice is printed once to stderr ("precision: auto -> ..."). Test switch:
// OLMO_TEST_PRECISION_PROBE=bf16|fp32 replaces the probe's outcome where bf16 is usable (native,
// or OLMO_BF16=emulate); any other value is an error.
struct PrecisionChoice {
  model::Precision precision = model::Precision::fp32;
  std::string why;
};
PrecisionChoice choose_precision(const Config& c, const std::string& resumed = "");
// (choose_precision also records its pick in core/runtime.h as setting "precision": source
// config, checkpoint, probe with the GEMM timings, or test override.)

// bf16_mixed's attention kernels (kernels::attention_bf16_choice: OLMO_ATTN_BF16, else the bf16
// kernels): decided, recorded in core/runtime.h as setting "attention" and printed to stderr
// once per process ("attention (bf16_mixed): ...").
// Called where a bf16_mixed model is set up for training (trainer_builder.cpp).
void report_attention_choice();

}  // namespace olmo::train
