// TrainModule: one optimizer step of the data-parallel model (see train_module.h).
#include "train/train_module.h"

#include <cmath>
#include <limits>
#include <optional>

#include "core/profile.h"
#include "core/timer.h"
#include "model/olmo3.h"
#include "optim/grad_clip.h"
#include "train/optimizer_setup.h"

namespace olmo::train {

optim::ScheduleConfig schedule_config(const Config& c) {
  optim::ScheduleConfig s;
  s.name = c.scheduler.name.value();  // validate() requires it
  s.units = "steps";
  s.alpha_f = c.scheduler.alpha_f;
  s.warmup_min_lr = c.scheduler.warmup_min_lr;
  if (s.name != optim::ScheduleKind::constant) s.warmup = c.scheduler.warmup_steps;
  if (s.name == optim::ScheduleKind::wsd) s.decay = c.scheduler.decay_steps;
  return s;
}

TrainModule::TrainModule(model::Olmo3& model, dist::Communicator& comm, const Config& cfg,
                         const TrainModuleOptions& o)
    : model_(model), comm_(comm), o_(o) {
  z_coef_ = float(cfg.trainer.z_loss_multiplier);
  max_grad_norm_ = cfg.optim.max_grad_norm;
  lr0_ = cfg.optim.lr;
  skip_rule_ = cfg.optim.name == OptimizerKind::skip_step_adamw && cfg.optim.skip_step;
  schedule_ = optim::make_schedule(schedule_config(cfg));
  dist::DataParallelOptions dpo = o.dp;
  dpo.micro_instances = o.micro_instances;
  dp_ = std::make_unique<dist::DataParallel>(comm_, model_, dpo);
  const auto groups = param_groups(model_, cfg.optim);  // train/optimizer_setup.h
  const optim::AdamWConfig ac = adamw_config(cfg.optim);
  const size_t lo = dp_->shard_begin();
  adamw_ = std::make_unique<optim::AdamW>(model_.num_params(), groups, ac, lo,
                                          lo + dp_->shard_len());
  skip_ = std::make_unique<optim::SkipStep>(int(cfg.optim.rolling_interval_length),
                                            cfg.optim.sigma_factor);
}

TrainModule::~TrainModule() = default;

void TrainModule::shard_parameters() { dp_->shard_parameters(); }

float* TrainModule::param_shard() { return dp_->sharded_params(); }
const float* TrainModule::param_shard() const { return dp_->sharded_params(); }

double TrainModule::lr_at(int64_t step) const { return schedule_->get_lr(lr0_, step, o_.t_max); }

void TrainModule::train_batch(const int32_t* tokens, const int32_t* targets,
                                const int32_t* doc_ids, int64_t B, int64_t T, int64_t step,
                                StepResult& r, const Hooks& hooks) {
  // The global batch's target tokens (the loss is their mean), counted before any backward.
  const dist::DataParallel::Counts counts = dp_->count(targets, B, T, step);

  // Forward and backward of one micro-batch of this rank's instances into the model's gradient.
  const auto forward_backward = [&](const dist::MicroBatch& mb) {
    const int64_t at = mb.first * T;
    kernels::LossSums s =
        model_.forward_backward(tokens + at, targets + at, doc_ids ? doc_ids + at : nullptr,
                                mb.n, T, mb.grad_scale, z_coef_);
    if (mb.report && hooks.post_backward) hooks.post_backward(mb.index, s);
    return s;
  };
  // The mean gradient of the global batch (this rank's part of it) and its loss: the
  // data-parallel object runs forward_backward over this rank's micro-batches and sums them
  // with every other rank's.
  const dist::DataParallel::Reduced red =
      dp_->gradient(counts, tokens, B, T, step, forward_backward, hooks.unit_grad_done);
  float* g = red.grad;
  const size_t ng = red.n;
  r.loss = red.loss;
  r.z_loss = double(z_coef_) * red.z_sum;
  r.target_tokens = counts.total;
  r.reduce_redos = red.rescales;
  r.reduce_recomputes = red.recomputes;

  // Global norm, clipping and the skip-step decision (identical on every rank).
  std::optional<float> norm;
  if (max_grad_norm_ > 0) {
    norm = red.grad_nonfinite ? std::numeric_limits<float>::quiet_NaN() : float(dp_->grad_norm(g, ng));
    optim::clip_grads_with_norm(g, ng, max_grad_norm_, *norm);
  }
  r.grad_norm = norm ? double(*norm) : std::nan("");
  // Non-finite guard (every rank decides alike: the loss sums, the flags and the norm are global).
  bool grad_nonfinite = red.grad_nonfinite || (norm && !std::isfinite(*norm));
  if (!norm && !red.grad_nonfinite) grad_nonfinite = dp_->any_nonfinite(g, ng);
  const bool loss_nonfinite = !std::isfinite(r.loss) || !std::isfinite(r.z_loss);
  r.nonfinite = grad_nonfinite || loss_nonfinite;
  if (r.nonfinite)
    r.nonfinite_what = loss_nonfinite && grad_nonfinite ? "loss and gradient"
                                                        : (loss_nonfinite ? "loss" : "gradient");
  bool apply = !r.nonfinite;
  // The skip-step window sees finite steps only (a NaN in it would skip every step after it).
  if (apply && skip_rule_) apply = skip_->record(float(r.loss), norm);
  r.skipped = !apply;
  r.lr = lr_at(step);
  if (hooks.pre_optim) hooks.pre_optim(r);
  // Update this rank's shard, then every rank gets the updated parameters.
  const double to = now_seconds();
  adamw_->step(dp_->param_shard(), g, r.lr, !apply,
               hooks.optim_block_done ? &hooks.optim_block_done : nullptr);
  if (profile::enabled()) profile::add("optimizer", now_seconds() - to, 0);
  dp_->end_step(apply);
}

}  // namespace olmo::train
