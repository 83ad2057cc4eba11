// TrainModule: one optimizer step of the data-parallel model (see train_module.h).
#include "train/train_module.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>

#include "core/error.h"
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
  dp_ = std::make_unique<dist::DataParallel>(comm_, model_, o.dp);
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
  // Target-token count, before any backward (dist::DataParallel: global or per-rank
  // normalisation, as configured).
  const dist::DataParallel::Counts counts = dp_->count(targets, B, T, step);
  const float grad_scale = dp_->grad_scale(counts);
  // Forward/backward per micro-batch; the data-parallel object accumulates and reduces. A redo
  // (the exact reduction's scales outgrown, decided alike on every rank) runs the passes again.
  const bool measuring = !dp_->scales_known();
  dist::DataParallel::Reduced red;
  r.reduce_redos = 0;
  // Each unit's gradient, as the backward finishes it: the harness's hook, then the
  // data-parallel object (which may put it on the wire at once).
  int pass = 0;
  int64_t micro = 0;
  struct ClearHook {
    model::Olmo3& m;
    ~ClearHook() { m.set_grad_done_hook(nullptr); }
  } clear_hook{model_};
  // exact: one instance per forward/backward (the unit of exactness, DataParallel::
  // per_instance); fast: micro-batches of micro_instances. Rounds past this rank's own
  // micro-batches are padding (equal_rounds): instance 0 again with gradient scale 0, its
  // loss sums dropped, no hooks.
  const int64_t mi = dp_->per_instance() ? 1 : o_.micro_instances;
  const int64_t own = (B + mi - 1) / mi;
  const int64_t rounds =
      dp_->equal_rounds() ? std::max(own, (counts.max_rank_instances + mi - 1) / mi) : own;
  bool padding = false;
  model_.set_grad_done_hook([&](int64_t, size_t a, size_t b) {
    if (hooks.unit_grad_done && pass == 0 && !padding) hooks.unit_grad_done(micro, a, b);
    dp_->unit_grad_done(a, b);
  });
  for (;; ++pass) {
    dp_->begin_pass(counts);
    for (micro = 0; micro < rounds; ++micro) {
      padding = micro >= own;
      const int64_t i = padding ? 0 : micro * mi;
      const int64_t n = padding ? 1 : std::min(mi, B - i);
      dp_->before_micro_batch(micro, micro + 1 == rounds);
      kernels::LossSums s = model_.forward_backward(tokens + i * T, targets + i * T,
                                                    doc_ids ? doc_ids + i * T : nullptr, n, T,
                                                    padding ? 0.0f : grad_scale, z_coef_);
      if (padding) {
        dp_->after_micro_batch(tokens, 0, kernels::LossSums{});
        continue;
      }
      if (hooks.post_backward && pass == 0) hooks.post_backward(micro, s);
      dp_->after_micro_batch(tokens + i * T, n * T, s);
    }
    red = dp_->reduce(counts);
    if (!red.redo) break;
    ++r.reduce_redos;
    OLMO_CHECK(pass < 2, "step ", step, ": the exact reduction still overflowed after ", pass + 1,
               " redos with raised scales (internal error)");
    if (comm_.rank() == 0 && !(measuring && pass == 0))
      std::fprintf(stderr, "step %lld: exact reduction rescaled (a gradient outgrew its tensor's "
                   "scale); the step is recomputed (redo %lld of the run)\n",
                   static_cast<long long>(step), static_cast<long long>(dp_->redos()));
  }
  float* g = red.grad;
  const size_t ng = red.n;
  r.loss = red.loss;
  r.z_loss = double(z_coef_) * red.z_sum;
  r.target_tokens = counts.total;

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
  adamw_->step(dp_->param_shard(), g, r.lr, !apply);
  if (profile::enabled()) profile::add("optimizer", now_seconds() - to, 0);
  dp_->end_step(apply);
}

}  // namespace olmo::train
