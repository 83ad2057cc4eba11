// The training loop, OLMo-core semantics (train/trainer.py + TransformerTrainModule.train_batch),
// data-parallel over W processes (src/distributed; W = 1 without mpirun). Step s (1-based: incremented
// before the batch is trained) runs in explicit stages:
//   1. batch:  loader.next() gives this rank's slice of the global batch of G instances x T
//              tokens, in whole micro-batches (rank r runs micro-batches r, r+W, ...);
//   2. count:  total = target tokens != -100 of the GLOBAL batch (all-reduced before the
//              backward); grad_scale = 1 / total (trainer.loss_normalization global, the default
//              for fsl); per_rank (OLMo-core's train_batch, the default for packed_fsl):
//              grad_scale = 1 / (W * this rank's count), loss = mean over ranks of per-rank
//              means -- with packing the counts differ per rank, so that trajectory depends on W;
//              targets and (data.generate_doc_lengths) document ids come from the dataset
//              (padding is never a target; attention is masked within documents);
//   3. accumulate: for each of this rank's micro-batches: grads = grad_scale * d(ce_sum + z *
//              z_sum); dist.reduce=exact turns each micro-batch's gradient into 128-bit fixed
//              point and reduce-scatters it at once (order-free sums: the same bits for any W);
//              fast accumulates in fp32 and reduce-scatters once;
//   4. reduce: each rank holds the summed gradient of its ZeRO shard only (ZeRO-2); loss =
//              sum ce / total and z_loss = z * sum z / total (global sums);
//   5. clip / skip: global grad L2 norm (pre-clip) from the shards, clip to
//              optim.max_grad_norm; the skip-step rule on (loss, norm) (same on every rank);
//   6. update: AdamW on this rank's shard (moments sharded: ZeRO-1), all-gather the parameters;
//              lr = schedule(lr0, s, t_max); tokens_seen += G*T.
//   callbacks (logging, evaluation, checkpointing, ...) run after every step; the loop itself
//   knows none of them, and the model knows nothing of ranks.
// Numeric faults: a step whose loss, z-loss or any gradient element is NaN/Inf on any rank (a
//   global decision: loss sums are all-reduced, the norm / non-finite flag comes from every
//   shard) is skipped whatever optim.skip_step says: no weight, moment or step-count change, and
//   its values do not enter the skip-step window (see optim/skip_step.h). It is logged
//   ({"kind":"info","event":"nonfinite"} in metrics.jsonl, a console line). While such a streak
//   lasts no checkpoint is written (a due one is written at the next finite step, or at the end
//   of the run); trainer.max_nonfinite_steps in a row stop the run with an error, leaving the
//   last checkpoint before the streak as the newest complete one. Test switch (refused unless
//   allow_fault_injection: true): OLMO_TEST_NAN=KIND:STEP[:COUNT[:RANK]], KIND = loss | grad |
//   loss_inf | grad_inf (into the first micro-batch's CE sum / one gradient element on RANK,
//   default 0, for COUNT steps from STEP) | zloss | zloss_inf (into its z-loss sum only: the
//   CE stays finite) or weight (a NaN written into one weight after the
//   update of STEP: the checkpoint writer must refuse it).
// Resources: before anything is allocated the per-process memory plan is checked against the
//   available memory (train/resource_limits.h; trainer.check_memory).
// Start: rank 0 locks the run dir; if it holds a complete checkpoint the run resumes from the
// newest one (complete state, bitwise, resharded to this world size); else trainer.load_path (a
// phase start: weights always, optimizer state / trainer state per load_optim_state /
// load_trainer_state) or trainer.init_from_hf, else init_weights(trainer.init_seed).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ckpt/checkpoint.h"
#include "ckpt/run_lock.h"
#include "data/fsl_dataset.h"
#include "data/instance_source.h"
#include "data/loader.h"
#include "distributed/communicator.h"
#include "distributed/zero.h"
#include "model/olmo3.h"
#include "optim/adamw.h"
#include "optim/schedule.h"
#include "optim/skip_step.h"
#include "train/config.h"
#include "train/metrics_log.h"
#include "train/progress.h"

namespace olmo::train {

struct StepResult {
  int64_t step = 0;            // 1-based global step just trained
  double loss = 0;             // CE, token mean over the step
  double z_loss = 0;           // z_loss_multiplier * mean lse^2 (the added term)
  double grad_norm = 0;        // pre-clip global L2 norm (NaN if clipping is off)
  double lr = 0;
  bool skipped = false;        // skip-step rule fired: no weight/moment/step-count change
  bool nonfinite = false;      // loss, z-loss or gradient NaN/Inf (on any rank): always skipped
  std::string nonfinite_what;  // "loss", "gradient" or "loss and gradient"
  int64_t target_tokens = 0;   // supervised positions this step
  int64_t batch_tokens = 0;    // G * T
  int64_t tokens_seen = 0;     // after this step
  double seconds = 0;          // wall time of this step (data + fwd/bwd + optimizer)
  double comm_seconds = 0;     // of which inside communication calls
  double tokens_per_s = 0;
  double mfu = 0;              // percent: flops_per_token * tokens/s / measured fp32 peak
  double eta_s = 0;
  uint64_t batch_hash = 0;     // content hash of the global batch
  std::vector<int64_t> instance_indices;  // filled when trainer.log_batch_indices
};

class Trainer;

// Hooks of the loop. Callbacks may keep state across a restart by implementing save/load
// (stored in the checkpoint under "callbacks.<name>").
class Callback {
 public:
  virtual ~Callback() = default;
  virtual std::string name() const = 0;
  virtual void on_start(Trainer&) {}
  virtual void on_step(Trainer&, const StepResult&) {}
  virtual void on_end(Trainer&) {}
  virtual nlohmann::json save() const { return nullptr; }
  virtual void load(const nlohmann::json&) {}
};

// How the starting state was obtained.
enum class StartKind { fresh, hf_init, phase, resume };

class Trainer {
 public:
  // Validates cfg (files included), locks the run dir, builds everything and restores state.
  explicit Trainer(Config cfg);
  ~Trainer();

  void add_callback(std::unique_ptr<Callback> cb);
  // Runs steps until total_steps(); calls on_start/on_step/on_end.
  void fit();
  // One training step (no callbacks); public for tests and tools.
  StepResult train_step();
  // Writes RUN_DIR/stepN with the complete state; applies keep_last. Returns the dir.
  std::string save_checkpoint();
  // Wall time of the last save_checkpoint(), the fingerprint's share of it, and the CPU time
  // the fingerprint took (part of it runs beside the writes on a second thread).
  struct SaveTiming {
    double seconds = 0, fingerprint_seconds = 0, fingerprint_cpu_seconds = 0;
  };
  const SaveTiming& last_save() const { return last_save_; }

  // Accessors.
  const Config& config() const { return cfg_; }
  model::Olmo3& model() { return *model_; }
  optim::AdamW& optimizer() { return *adamw_; }
  optim::SkipStep& skip_step() { return *skip_; }
  data::DataLoader& loader() { return *loader_; }
  // The training instances (fsl or packed_fsl; the audits read both).
  const data::InstanceSource& instances() const { return *dataset_; }
  int64_t step() const { return step_; }
  int64_t tokens_seen() const { return tokens_seen_; }
  int64_t total_steps() const { return total_steps_; }   // this run stops here
  int64_t schedule_steps() const { return t_max_; }      // t_max of the LR schedule
  double lr_at(int64_t step) const;
  StartKind start_kind() const { return start_; }
  const std::string& start_from() const { return start_from_; }  // checkpoint / HF dir used
  double peak_gflops() const { return peak_gflops_; }   // of one process (MFU uses W times it)
  // Both measured peaks (peak_gflops() is the one of the model's matmul precision); bf16 is 0
  // on a CPU without AVX512_BF16.
  double peak_fp32_gflops() const { return peak_fp32_gflops_; }
  double peak_bf16_gflops() const { return peak_bf16_gflops_; }
  double flops_per_token() const { return flops_per_token_; }
  const std::string& run_dir() const { return cfg_.trainer.run_dir; }
  dist::Communicator& comm() { return *comm_; }
  const dist::GradReducer& reducer() const { return *reducer_; }
  // Bytes of this rank's reduced-gradient shard buffer (0 when one fast process reduces in place).
  size_t grad_shard_bytes() const { return shard_grad_.size() * sizeof(float); }
  std::vector<Callback*> callbacks();
  // Warnings from startup (e.g. a corrupt newer checkpoint that was skipped).
  const std::vector<std::string>& warnings() const { return warnings_; }
  // RUN_DIR/metrics.jsonl and the console (shared by the callbacks).
  MetricsLog& metrics() { return *metrics_; }
  Progress& progress() { return *progress_; }
  bool stop_requested() const { return stop_; }
  // Non-finite steps in a row up to the last one trained (0 after a finite step).
  int64_t nonfinite_streak() const { return nonfinite_streak_; }
  void request_stop() { stop_ = true; }
  // Data-parallel position of this process (0 / 1 in a one-process run). Callbacks that write
  // run-dir files do so on rank 0 only.
  int rank() const { return rank_; }
  int world() const { return world_; }
  // The batch of the step just trained (this rank's instances, as the model consumed them).
  const data::DataLoader::Batch& last_batch() const { return batch_; }
  // Called on every batch right after the loader produced it and before the model sees it
  // (audits, fault injection). The hook may modify the batch.
  using BatchHook = std::function<void(Trainer&, data::DataLoader::Batch&)>;
  void set_batch_hook(BatchHook h) { batch_hook_ = std::move(h); }

 private:
  void build_optimizer();
  // resume: the same run continues (run dir's own checkpoint): model and schedule must agree.
  void restore(const std::string& dir, bool weights, bool optim_state, bool trainer_state,
               bool resume);
  void init_from_hf(const std::string& dir);
  void measure_peak();
  void read_moments(const ckpt::CheckpointReader& r);
  // Collective: layout-independent fingerprints of the state (trainer_state.cpp).
  nlohmann::json state_fingerprint(const ckpt::CheckpointWriter* w = nullptr);
  void verify_loaded(const ckpt::CheckpointReader& r, bool optim_state, bool trainer_state,
                     bool resume);
  nlohmann::json trainer_section() const;
  nlohmann::json schedule_change_;
  SaveTiming last_save_;  // an allowed schedule change at resume (logged at start)
  void maybe_test_kill(const char* where);
  void check_memory(const model::ModelConfig& mc, bool exact, int64_t micro_batches);
  // OLMO_TEST_NAN (see above): parsed once in the constructor.
  struct TestNan {
    std::string kind;   // "" = off
    int64_t step = 0, count = 1;
    int rank = 0;
    bool active(int64_t s, int r) const {
      return !kind.empty() && r == rank && s >= step && s < step + count;
    }
  };
  void parse_test_nan();
  void on_nonfinite(const StepResult& r);

  Config cfg_;
  std::unique_ptr<ckpt::RunDirLock> lock_;
  std::unique_ptr<model::Olmo3> model_;
  std::unique_ptr<data::InstanceSource> dataset_;
  bool per_rank_loss_ = false, doc_mask_ = false;
  bool exact_local_ = true;  // exact: local (true) or sharded accumulator (dist::local_accumulator)
  std::vector<int32_t> doc_ids_;
  std::unique_ptr<data::DataLoader> loader_;
  dist::Communicator* comm_ = nullptr;
  std::unique_ptr<dist::GradReducer> reducer_;
  std::vector<float> shard_grad_;  // the reduced gradient of this rank's shard
  std::unique_ptr<optim::AdamW> adamw_;
  std::unique_ptr<optim::SkipStep> skip_;
  std::unique_ptr<optim::Schedule> schedule_;
  std::vector<std::unique_ptr<Callback>> callbacks_;
  nlohmann::json callback_state_;  // restored "callbacks" section, handed to add_callback()
  std::unique_ptr<MetricsLog> metrics_;
  std::unique_ptr<Progress> progress_;
  std::vector<std::string> warnings_;
  StartKind start_ = StartKind::fresh;
  std::string start_from_;
  int64_t step_ = 0, tokens_seen_ = 0, total_steps_ = 0, t_max_ = 0;
  int64_t micro_instances_ = 0;
  double peak_gflops_ = 0, flops_per_token_ = 0;
  double peak_fp32_gflops_ = 0, peak_bf16_gflops_ = 0;
  double recent_step_s_ = 0;   // running mean of step time (for the ETA)
  int64_t timed_steps_ = 0;
  bool stop_ = false;
  TestNan test_nan_;
  int64_t nonfinite_streak_ = 0, nonfinite_first_ = 0;
  bool ckpt_deferred_ = false;   // a checkpoint fell due during a non-finite streak
  bool finishing_ = false;       // on_end callbacks run: checkpoints are written regardless
  int rank_ = 0, world_ = 1;
  BatchHook batch_hook_;
  data::DataLoader::Batch batch_;
  std::vector<int32_t> targets_;
};

// The LR schedule of a config (scheduler.*; t_max is schedule_steps(c)).
optim::ScheduleConfig schedule_config(const Config& c);
// Loads the weights of a checkpoint dir (stepN) or HF dir into a new model.
std::unique_ptr<model::Olmo3> load_model_for_inference(const std::string& dir);

}  // namespace olmo::train
