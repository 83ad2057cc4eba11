// The train module (OLMo-core's TransformerTrainModule.train_batch): given this rank's batch of
// B instances x T tokens and its targets, one optimizer step of the data-parallel model, in the
// recipe's order:
//   count:      the global batch's target tokens (the loss is their mean);
//   gradient:   forward/backward of the micro-batches into the model's gradient; the
//               data-parallel object (dist::DataParallel, data_parallel.h) chooses this rank's
//               micro-batches, sums every rank's gradients and returns this rank's part of the
//               mean gradient and the global loss (how it reduces, shards and rescales is
//               its own business);
//   clip/skip:  global pre-clip L2 norm, clipping to max_grad_norm, the non-finite guard (a
//               NaN/Inf loss, z-loss or gradient on any rank skips the step) and the skip-step
//               rule (finite steps only), identical on every rank;
//   update:     AdamW on this rank's parameter shard, then every rank gets the updated
//               parameters (applied steps only), lr = schedule(lr0, step, t_max).
// It knows nothing of checkpoints, callbacks, metrics or run dirs: the harness passes plain
// functions (after each micro-batch's backward, as each unit's gradient is done, before the
// optimizer) for its hooks.
// Cost: B/micro_instances (exact: B) forward/backward passes, one reduction of P floats (exact:
// plus a fixed-point conversion per instance), an optimizer pass over P/W floats, one
// all-gather.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "distributed/data_parallel.h"
#include "optim/adamw.h"
#include "optim/schedule.h"
#include "optim/skip_step.h"
#include "train/callback.h"
#include "train/config.h"

namespace olmo::model {
class Olmo3;
}

namespace olmo::train {

// The LR schedule of a config (scheduler.*; t_max is schedule_steps(c)).
optim::ScheduleConfig schedule_config(const Config& c);

struct TrainModuleOptions {
  int64_t micro_instances = 1;   // instances per micro-batch (dist.reduce=fast; exact: 1)
  int64_t t_max = 0;             // of the LR schedule
  // Reduction, accumulator, ZeRO stage and loss normalisation (trainer.loss_normalization
  // resolved, see trainer_builder.h): the DataParallel object's settings.
  dist::DataParallelOptions dp;
};

class TrainModule {
 public:
  // The harness's hooks inside a step (either may be empty).
  struct Hooks {
    std::function<void(int64_t micro, kernels::LossSums&)> post_backward;
    std::function<void(const StepResult&)> pre_optim;
    // The backward of micro-batch `micro` has finished the gradient of the flat range [a, b)
    // (one parameter unit; before the data-parallel reduction takes it).
    std::function<void(int64_t micro, size_t a, size_t b)> unit_grad_done;
    // The optimizer has written this step's values of the flat range [a, b) (AdamW::BlockFn).
    optim::AdamW::BlockFn optim_block_done;
  };

  TrainModule(model::Olmo3& model, dist::Communicator& comm, const Config& cfg,
              const TrainModuleOptions& o);
  ~TrainModule();

  // One step on this rank's B x T tokens (targets and, when given, document ids alike). Fills
  // r.loss, z_loss, grad_norm, lr, skipped, nonfinite(_what), target_tokens, reduce_redos.
  void train_batch(const int32_t* tokens, const int32_t* targets, const int32_t* doc_ids,
                     int64_t B, int64_t T, int64_t step, StepResult& r, const Hooks& hooks);

  double lr_at(int64_t step) const;
  const optim::Schedule& schedule() const { return *schedule_; }
  optim::AdamW& optimizer() { return *adamw_; }
  const optim::AdamW& optimizer() const { return *adamw_; }
  optim::SkipStep& skip_step() { return *skip_; }
  const optim::SkipStep& skip_step() const { return *skip_; }
  const dist::GradReducer& reducer() const { return dp_->reducer(); }
  dist::DataParallel& data_parallel() { return *dp_; }
  const dist::DataParallel& data_parallel() const { return *dp_; }
  // Bytes of this rank's reduced-gradient shard buffer (0 when one fast process reduces in place).
  size_t grad_shard_bytes() const { return dp_->grad_shard_bytes(); }

  // ZeRO-3: hands the model the provider (the model keeps no full buffers; build the model
  // with own_storage false); the starting state is then written into param_shard(). No-op
  // under ZeRO-2.
  void shard_parameters();
  // ZeRO-3 after shard_parameters(): this rank's parameter shard [shard_begin, + shard_len) of
  // the flat vector; null otherwise (the model's params() hold everything).
  float* param_shard();
  const float* param_shard() const;

 private:
  model::Olmo3& model_;
  dist::Communicator& comm_;
  TrainModuleOptions o_;
  float z_coef_ = 0;
  double max_grad_norm_ = 0, lr0_ = 0;
  bool skip_rule_ = false;   // optim.name skip_step_adamw with optim.skip_step
  std::unique_ptr<dist::DataParallel> dp_;  // accumulation, reduction, ZeRO sharding
  std::unique_ptr<optim::AdamW> adamw_;
  std::unique_ptr<optim::SkipStep> skip_;
  std::unique_ptr<optim::Schedule> schedule_;
};

}  // namespace olmo::train
