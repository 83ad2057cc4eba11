// The hook interface of the training loop (OLMo-core's Callback) and the record of one step.
// A callback sees the Trainer through its public API only; every hook is a no-op by default.
// Order of the hooks in a run (Trainer::fit, Trainer::train_step, Trainer::save_checkpoint):
//   on_resume        once, when the starting state is in memory (fresh, HF, phase or resume:
//                    Trainer::start_kind()); callbacks the builder registers (the test fault
//                    switches) get it inside the constructor, those added later at fit()'s start
//   on_start         fit() begins
//   per step:  pre_step       this rank's batch, right after the loader produced it and before the
//                             model sees it; the hook may modify it (audits, data fault injection)
//              unit_grad_done the backward of micro-batch `micro` finished the gradient of one
//                             parameter unit, flat range [a, b) (model/param_units.h order); may
//                             modify that range of the gradient buffer (the data-parallel
//                             reduction takes it right after: dist.overlap)
//              post_backward  after each micro-batch's forward/backward (micro = 0, 1, ... of this
//                             rank); may modify the loss sums (the gradient may already be on the
//                             wire: modify it in unit_grad_done)
//              pre_optim      the step's loss, norm and skip decision are known, the optimizer has
//                             not run
//              post_step      the update is applied and all-gathered; the result is final (timing
//                             included); end of train_step()
//              on_step        after train_step() (logging, evaluation, checkpoints)
//   evaluation:  mid_eval  rank 0's held-out losses of one evaluation are computed, none of its
//                          records written yet (monitor/callbacks.h Evaluator; at start, at an
//                          interval step, at the end or the one a resume redoes)
//   checkpoint:  on_checkpoint_written  this rank's checkpoint data is written, not yet committed
//                post_checkpoint        the checkpoint is committed (dir given)
//   on_end           fit() ends
// Callbacks may keep state across a restart by implementing save/load (stored in the
// checkpoint under "callbacks.<name>").
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "data/loader.h"

namespace olmo::kernels {
struct LossSums;
}

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
  int64_t reduce_redos = 0;    // exact reduction: rescale events (a gradient outgrew its scale)
  int64_t reduce_recomputes = 0;  // of them, those that ran the forward/backward again
  int64_t streamed_units = 0;  // rank 0's units streamed during the backward (dist.overlap)
  int64_t embed_rows_skipped = 0;  // rank 0's embedding rows the row-sparse path skipped
                                   // (dist::GradReducer::skipped_rows)
  double step_tokens_per_s = 0;  // batch_tokens / seconds (train_step alone)
  // Wall clock (train/run_clock.h), set after the post_step hooks: this step's span runs from
  // the end of the previous step's (or the start of fit()) to the end of this one's post_step
  // hooks, so it also holds what ran between the two steps (callbacks: logging, evaluation,
  // checkpoints); `time` is the Unix time of its end.
  double span_seconds = 0;
  double time = 0;
  double tokens_per_s = 0;       // batch_tokens / span_seconds (what a stopwatch says)
  double mfu = 0;  // percent: flops_per_token * tokens_per_s / (W x the run's peak), <= 100
  double eta_s = 0;  // (also after the post_step hooks)
  uint64_t batch_hash = 0;     // content hash of the global batch
  uint64_t state_fingerprint = 0;  // the whole state after this step (Trainer::state_digest)
  std::vector<int64_t> instance_indices;  // filled when trainer.log_batch_indices
};

class Trainer;

class Callback {
 public:
  virtual ~Callback() = default;
  virtual std::string name() const = 0;
  virtual void on_resume(Trainer&) {}
  virtual void on_start(Trainer&) {}
  virtual void pre_step(Trainer&, data::DataLoader::Batch&) {}
  virtual void post_backward(Trainer&, int64_t /*micro*/, kernels::LossSums&) {}
  virtual void unit_grad_done(Trainer&, int64_t /*micro*/, size_t /*a*/, size_t /*b*/) {}
  virtual void pre_optim(Trainer&, const StepResult&) {}
  virtual void post_step(Trainer&, const StepResult&) {}
  virtual void on_step(Trainer&, const StepResult&) {}
  virtual void mid_eval(Trainer&) {}
  virtual void on_checkpoint_written(Trainer&) {}
  virtual void post_checkpoint(Trainer&, const std::string& /*dir*/) {}
  virtual void on_end(Trainer&) {}
  // null = no state.
  virtual nlohmann::json save() const;
  virtual void load(const nlohmann::json&) {}
};

}  // namespace olmo::train
