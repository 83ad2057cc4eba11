// The training loop, OLMo-core semantics (train/trainer.py + TransformerTrainModule.train_batch):
//   step s (1-based: incremented before the batch is trained):
//     batch  = loader.next()                       global batch of G instances x T tokens
//     total  = number of target tokens != -100 in this process's batch, counted BEFORE the
//              forward; grad_scale = 1 / total
//     for each micro-batch: grads += grad_scale * d(ce_sum + z * z_sum)     (accumulation)
//     loss   = sum ce / total (logged "loss"); z_loss = z * sum z / total (logged, added to the
//              optimised objective, excluded from the skip-step rule as in OLMo-core)
//     norm   = global grad L2 norm (pre-clip), clip to optim.max_grad_norm
//     skip   = skip-step rule on (loss, norm)    (SkipStepAdamW)
//     lr     = schedule(lr0, s, t_max);  AdamW step with factor 0/1;  tokens_seen += G*T
//   callbacks (logging, evaluation, checkpointing, ...) run after every step; the loop itself
//   knows none of them.
// Start: the run dir is locked; if it holds a complete checkpoint the run resumes from the
// newest one (complete state, bitwise); else trainer.load_path (a phase start: weights always,
// optimizer state / trainer state per load_optim_state / load_trainer_state) or
// trainer.init_from_hf, else init_weights(trainer.init_seed).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ckpt/run_lock.h"
#include "data/fsl_dataset.h"
#include "data/loader.h"
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
  int64_t target_tokens = 0;   // supervised positions this step
  int64_t batch_tokens = 0;    // G * T
  int64_t tokens_seen = 0;     // after this step
  double seconds = 0;          // wall time of this step (data + fwd/bwd + optimizer)
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

  // Accessors.
  const Config& config() const { return cfg_; }
  model::Olmo3& model() { return *model_; }
  optim::AdamW& optimizer() { return *adamw_; }
  optim::SkipStep& skip_step() { return *skip_; }
  data::DataLoader& loader() { return *loader_; }
  const data::FslDataset& dataset() const { return *dataset_; }
  int64_t step() const { return step_; }
  int64_t tokens_seen() const { return tokens_seen_; }
  int64_t total_steps() const { return total_steps_; }   // this run stops here
  int64_t schedule_steps() const { return t_max_; }      // t_max of the LR schedule
  double lr_at(int64_t step) const;
  StartKind start_kind() const { return start_; }
  const std::string& start_from() const { return start_from_; }  // checkpoint / HF dir used
  double peak_gflops() const { return peak_gflops_; }
  double flops_per_token() const { return flops_per_token_; }
  const std::string& run_dir() const { return cfg_.trainer.run_dir; }
  std::vector<Callback*> callbacks();
  // Warnings from startup (e.g. a corrupt newer checkpoint that was skipped).
  const std::vector<std::string>& warnings() const { return warnings_; }
  // RUN_DIR/metrics.jsonl and the console (shared by the callbacks).
  MetricsLog& metrics() { return *metrics_; }
  Progress& progress() { return *progress_; }
  bool stop_requested() const { return stop_; }
  void request_stop() { stop_ = true; }

 private:
  void build_optimizer();
  void restore(const std::string& dir, bool weights, bool optim_state, bool trainer_state);
  void init_from_hf(const std::string& dir);
  void measure_peak();

  Config cfg_;
  std::unique_ptr<ckpt::RunDirLock> lock_;
  std::unique_ptr<model::Olmo3> model_;
  std::unique_ptr<data::FslDataset> dataset_;
  std::unique_ptr<data::DataLoader> loader_;
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
  double recent_step_s_ = 0;   // running mean of step time (for the ETA)
  int64_t timed_steps_ = 0;
  bool stop_ = false;
  data::DataLoader::Batch batch_;
  std::vector<int32_t> targets_;
};

// Model architecture <-> JSON (stored in every checkpoint, read by `olmo generate`).
nlohmann::json model_config_json(const model::ModelConfig& c);
model::ModelConfig model_config_from_json(const nlohmann::json& j, const std::string& where);
// Loads the weights of a checkpoint dir (stepN) or HF dir into a new model.
std::unique_ptr<model::Olmo3> load_model_for_inference(const std::string& dir);

}  // namespace olmo::train
