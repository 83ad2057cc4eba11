// The training harness (OLMo-core's Trainer): the loop, the callbacks and their hooks, checkpoints
// and metrics, data-parallel over W processes (src/distributed; W = 1 without mpirun). The setup
// is trainer_builder.cpp, one optimizer step is the TrainModule (train_module.h: micro-batches,
// loss normalisation, reduction, clipping, skip-step, AdamW). Step s (1-based: incremented
// before the batch is trained) runs in explicit stages:
//   1. batch:  loader.next() gives this rank's slice of the global batch of G instances x T
//              tokens, in whole micro-batches (rank r runs micro-batches r, r+W, ...); the
//              pre_step hooks may modify it; targets and (data.generate_doc_lengths) document
//              ids come from the dataset (padding is never a target; attention is masked
//              within documents);
//   2.-6. TrainModule::train_batch (count, accumulate, reduce, clip / skip, update; the
//              post_backward and pre_optim hooks run inside it); tokens_seen += G*T;
//   post_step hooks, then (in fit()) the on_step callbacks (logging, evaluation, checkpointing,
//   ...); the loop itself knows none of them, and the model knows nothing of ranks. The hook
//   order is in callback.h.
// Numeric faults: a step whose loss, z-loss or any gradient element is NaN/Inf on any rank (a
//   global decision: loss sums are all-reduced, the norm / non-finite flag comes from every
//   shard) is skipped whatever optim.skip_step says: no weight, moment or step-count change, and
//   its values do not enter the skip-step window (see optim/skip_step.h). It is logged
//   ({"kind":"info","event":"nonfinite"} in metrics.jsonl, a console line). While such a streak
//   lasts no checkpoint is written (a due one is written at the next finite step, or at the end
//   of the run); trainer.max_nonfinite_steps in a row stop the run with an error, leaving the
//   last checkpoint before the streak as the newest complete one. The test switches
//   OLMO_TEST_NAN / OLMO_TEST_KILL are a callback (train/test_faults.h).
// Resources: before anything is allocated the per-process memory plan is checked against the
//   available memory (train/resource_limits.h; trainer.check_memory).
// Start: rank 0 locks the run dir; if it holds a complete checkpoint the run resumes from the
// newest one (complete state, bitwise, resharded to this world size); else trainer.load_path (a
// phase start: weights always, optimizer state / trainer state per load_optim_state /
// load_trainer_state) or trainer.init_from_hf, else init_weights(trainer.init_seed).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "kernels/peak_theory.h"
#include "kernels/peak_tracker.h"
#include "train/callback.h"
#include "train/config.h"
#include "train/run_clock.h"

namespace olmo {
class StateVisitor;
}
namespace olmo::ckpt {
class CheckpointReader;
class CheckpointWriter;
class FusedTensorFingerprint;
class RunDirLock;
}  // namespace olmo::ckpt
namespace olmo::data {
class InstanceSource;
}
namespace olmo::dist {
class Communicator;
class GradReducer;
}  // namespace olmo::dist
namespace olmo::model {
class Olmo3;
}
namespace olmo::optim {
class AdamW;
class SkipStep;
}  // namespace olmo::optim

namespace olmo::train {

class CheckpointStager;
class MetricsLog;
struct PendingCheckpoint;
class Progress;
class TrainModule;
struct TrainerParts;
struct TrainerPosition;

// How the starting state was obtained.
enum class StartKind { fresh, hf_init, phase, resume };

class Trainer {
 public:
  // Validates cfg (files included), locks the run dir, builds everything and restores state
  // (trainer_builder.cpp).
  explicit Trainer(Config cfg);
  ~Trainer();

  void add_callback(std::unique_ptr<Callback> cb);
  // Runs steps until total_steps(); calls on_resume (of callbacks that did not get it yet),
  // on_start, on_step per step, on_end.
  void fit();
  // One training step with its step hooks (pre_step .. post_step), without on_step; public for
  // tests and tools.
  StepResult train_step();
  // Writes RUN_DIR/stepN with the complete state; applies keep_last. Returns the dir. Collective.
  // A checkpoint still in flight is committed first (at most one in flight). wait = false with
  // trainer.async_checkpoint (and not at the end of the run): the state is copied into a staging
  // buffer and written by a background thread (train/async_checkpoint.h); the returned dir is
  // committed later by finish_checkpoint(). Before writing, the run dir's file system must have
  // the checkpoint's size free (with a margin), else an error names the dir, need and free bytes.
  std::string save_checkpoint(bool wait = true);
  // Collective: waits for the checkpoint in flight (if any), commits it once every rank's part
  // is durable, applies keep_last; returns its dir ("" when none was in flight). Called before
  // the process exits normally (end of run, preemption, resize stop).
  std::string finish_checkpoint();
  // Collective, at a step boundary: commits the checkpoint in flight if every rank's writer
  // finished (one small all-reduce while one is in flight; nothing otherwise).
  void poll_checkpoint();
  bool checkpoint_in_flight() const { return pending_ != nullptr; }
  // Collective: one 64-bit fingerprint of the whole training state in memory -- fingerprint_json
  // (ckpt/fingerprint.h) of every tensor's layout-independent fingerprint (weights, both AdamW
  // moments) and every fingerprint group (trainer, schedule, optim, loader, skip-step) -- the
  // same value at any world size; a checkpoint of this step records its parts. Computed after
  // every step into StepResult::state_fingerprint (metrics.jsonl "state_fingerprint"; `olmo
  // verify`, monitor/run_verify.h). Cost: one pass over 3 x P / W floats per rank and one small
  // all-reduce (docs/reproducibility.md gives the measured share of a step); after a step, the
  // tensors the optimizer wrote come from `fused` (its sums added block by block during the
  // update, ckpt/fused_fingerprint.h) and only the small groups are left.
  uint64_t state_digest(const ckpt::FusedTensorFingerprint* fused = nullptr);
  // Timing of the last committed checkpoint: wall time from the save's start to the commit, the
  // fingerprint's share and CPU time (part of it runs beside the writes on a second thread), and
  // the time the training loop was blocked by it (stall_s = snapshot_s + commit_s: the staging
  // copy or, synchronous, the whole write; the wait for the writer and the commit).
  struct SaveTiming {
    double seconds = 0, fingerprint_seconds = 0, fingerprint_cpu_seconds = 0;
    double stall_s = 0, snapshot_s = 0, copy_s = 0, commit_s = 0, write_s = 0;
    size_t staged_bytes = 0;
    bool async = false;
    int64_t step = 0;  // the checkpoint's step (an asynchronous one commits at a later step)
  };
  const SaveTiming& last_save() const { return last_save_; }

  // Accessors.
  const Config& config() const { return cfg_; }
  model::Olmo3& model() { return *model_; }
  optim::AdamW& optimizer();
  optim::SkipStep& skip_step();
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
  // The peak MFU is quoted against, of one process (MFU uses W times it): the highest probe of
  // the run's precision (a checkpoint's included), raised to any achieved rate above it
  // (kernels/peak_tracker.h; trainer_throughput.cpp). 0 with trainer.peak_interval -1.
  double peak_gflops() const { return mfu_peak().peak(); }
  // Both precisions' peaks (peak_gflops() is the one of the model's matmul precision); bf16 is
  // 0 on a CPU without AVX512_BF16.
  double peak_fp32_gflops() const { return peak_fp32_.peak(); }
  double peak_bf16_gflops() const { return peak_bf16_.peak(); }
  // The CPU's theoretical fp32 FMA peak for this process's threads (kernels/peak_theory.h).
  const kernels::FmaPeakTheory& fma_theory() const { return fma_theory_; }
  // MFU in percent of `tokens_per_s` (of the whole world) against peak_gflops(): at most 100
  // (a rate above the peak raises it; the first raise is said once, after the step's callbacks:
  // a console line and an info record).
  double mfu(double tokens_per_s);
  // The run's stopwatch (started by fit()): records' "time" fields and the wall-clock spans.
  const RunClock& clock() const { return clock_; }
  double flops_per_token() const { return flops_per_token_; }
  const std::string& run_dir() const { return cfg_.trainer.run_dir; }
  dist::Communicator& comm() { return *comm_; }
  const dist::GradReducer& reducer() const;
  // Bytes of this rank's reduced-gradient shard buffer (0 when one fast process reduces in place).
  size_t grad_shard_bytes() const;
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

 private:
  // The starting state (trainer_builder.cpp): resume > phase start > HF weights > fresh init.
  void start();
  // resume: the same run continues (run dir's own checkpoint): model and schedule must agree.
  void restore(const std::string& dir, bool weights, bool optim_state, bool trainer_state,
               bool resume);
  // Probes the peaks (trainer.peak_interval; OLMO_TEST_PEAK replaces the first probe's result).
  void measure_peak();
  const kernels::PeakTracker& mfu_peak() const;
  kernels::PeakTracker& mfu_peak();
  // The peaks a checkpoint carries (section "peak", trainer_throughput.cpp).
  void visit_peak(StateVisitor& v);
  // The end of fit(): this segment's wall-clock and training-only throughput (an info record
  // {"event":"summary"} and a console line).
  void write_summary();
  // The first raise of the peak, once: a console line and {"event":"peak_raised"} (its "time":
  // clock_ second `at`, or now).
  void note_peak_raise(double at = -1);
  bool raise_noted_ = false;
  // Which parts a load restores (a save and a fingerprint visit every part).
  struct StateParts {
    bool weights = true, optim = true, trainer = true;
    bool resume = false, data_changed = false;
    std::string dir;  // the checkpoint loaded (messages)
  };
  // The run's whole checkpointed state, each object's part through its visit_state
  // (core/state_visitor.h, trainer_state.cpp).
  void visit_state(StateVisitor& v, const StateParts& parts);
  // Collective: layout-independent fingerprints of the state in memory (trainer_state.cpp).
  nlohmann::json state_fingerprint(const ckpt::FusedTensorFingerprint* fused = nullptr);
  void verify_loaded(const ckpt::CheckpointReader& r, bool optim_state, bool trainer_state,
                     bool resume);
  TrainerPosition position() const;
  nlohmann::json recipe() const;  // the checkpoint's "recipe" section (train/recipe_check.h)
  void on_nonfinite(const StepResult& r);
  void stop_on_nonfinite_streak();

  Config cfg_;
  std::unique_ptr<ckpt::RunDirLock> lock_;
  std::unique_ptr<model::Olmo3> model_;
  std::unique_ptr<data::InstanceSource> dataset_;
  bool doc_mask_ = false;
  std::vector<int32_t> doc_ids_;
  std::unique_ptr<data::DataLoader> loader_;
  dist::Communicator* comm_ = nullptr;
  std::unique_ptr<TrainModule> module_;
  std::vector<std::unique_ptr<Callback>> callbacks_;
  size_t resumed_callbacks_ = 0;   // callbacks_[0, this) got on_resume
  std::unique_ptr<nlohmann::json> callback_state_;  // restored "callbacks" section (add_callback)
  std::unique_ptr<nlohmann::json> recipe_change_;  // allowed recipe changes at resume (event)
  SaveTiming last_save_;
  // The checkpoint in flight (async) and the staging buffer + writer thread; the stager is
  // declared after, so it is destroyed first (its thread joined before the writer goes).
  std::shared_ptr<PendingCheckpoint> pending_;
  std::shared_ptr<CheckpointStager> stager_;
  std::unique_ptr<MetricsLog> metrics_;
  std::unique_ptr<Progress> progress_;
  std::vector<std::string> warnings_;
  StartKind start_ = StartKind::fresh;
  std::string start_from_;
  int64_t step_ = 0, tokens_seen_ = 0, total_steps_ = 0, t_max_ = 0;
  double flops_per_token_ = 0;
  kernels::PeakTracker peak_fp32_, peak_bf16_;
  kernels::FmaPeakTheory fma_theory_;
  bool probed_ = false;        // the first probe was made
  RunClock clock_;
  // This segment (this process's fit()): the end of the last step's wall-clock span (clock_
  // seconds), its steps, tokens and seconds inside train_step.
  double span_end_ = 0, segment_train_s_ = 0;
  int64_t segment_steps_ = 0, segment_tokens_ = 0;
  double recent_step_s_ = 0;   // running mean of the wall-clock span per step (for the ETA)
  int64_t timed_steps_ = 0;
  bool stop_ = false;
  int64_t nonfinite_streak_ = 0, nonfinite_first_ = 0;
  bool ckpt_deferred_ = false;   // a checkpoint fell due during a non-finite streak
  bool finishing_ = false;       // on_end callbacks run: checkpoints are written regardless
  int rank_ = 0, world_ = 1;
  data::DataLoader::Batch batch_;
  std::vector<int32_t> targets_;
};

}  // namespace olmo::train
