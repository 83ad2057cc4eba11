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
#include "distributed/fixed_point.h"
#include "model/olmo3.h"
#include "optim/grad_clip.h"
#include "train/optimizer_setup.h"
#include "train/zero3_params.h"

namespace olmo::train {

// Profile row `name` (trainer.profile) gets the wall time of its scope minus the reducer's
// communication inside it (those waits are the "comm" row).
class ProfileOutsideComm {
 public:
  ProfileOutsideComm(const char* name, const dist::GradReducer& r)
      : name_(name), r_(r), t0_(now_seconds()), c0_(r.comm_seconds()) {}
  ~ProfileOutsideComm() {
    if (profile::enabled())
      profile::add(name_, now_seconds() - t0_ - (r_.comm_seconds() - c0_), 0);
  }
  ProfileOutsideComm(const ProfileOutsideComm&) = delete;
  ProfileOutsideComm& operator=(const ProfileOutsideComm&) = delete;

 private:
  const char* name_;
  const dist::GradReducer& r_;
  double t0_, c0_;
};

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
  // The exact reduction's scale segments: one per parameter tensor, in flat order.
  std::vector<size_t> bounds;
  for (const auto& p : model_.layout().info) bounds.push_back(p.offset);
  std::sort(bounds.begin(), bounds.end());
  bounds.push_back(model_.num_params());
  reducer_ = std::make_unique<dist::GradReducer>(comm_, model_.num_params(), o.reduce,
                                                 o.bucket_elems, o.exact_local, bounds);
  // The input embedding's gradient is row-sparse: only the batch's token ids get one.
  const model::ModelConfig& mc = model_.config();
  reducer_->set_sparse_rows(model_.layout().embed, size_t(mc.vocab_size), size_t(mc.d_model));
  if (!(o.reduce == dist::ReduceMode::fast && comm_.world() == 1))
    shard_grad_.assign(reducer_->shard_len(), 0.0f);
  const auto groups = param_groups(model_, cfg.optim);  // train/optimizer_setup.h
  const optim::AdamWConfig ac = adamw_config(cfg.optim);
  const size_t lo = reducer_->shard_begin();
  adamw_ = std::make_unique<optim::AdamW>(model_.num_params(), groups, ac, lo,
                                          lo + reducer_->shard_len());
  skip_ = std::make_unique<optim::SkipStep>(int(cfg.optim.rolling_interval_length),
                                            cfg.optim.sigma_factor);
  if (o.zero_stage == 3) zero3_ = std::make_unique<Zero3Params>(*reducer_, model_);
}

TrainModule::~TrainModule() = default;

void TrainModule::shard_parameters() {
  if (!zero3_ || sharded_) return;
  zero3_->attach(model_);
  sharded_ = true;
}

float* TrainModule::param_shard() { return sharded_ ? zero3_->shard() : nullptr; }
const float* TrainModule::param_shard() const { return sharded_ ? zero3_->shard() : nullptr; }

double TrainModule::lr_at(int64_t step) const { return schedule_->get_lr(lr0_, step, o_.t_max); }

double TrainModule::train_batch(const int32_t* tokens, const int32_t* targets,
                                const int32_t* doc_ids, int64_t B, int64_t T, int64_t step,
                                StepResult& r, const Hooks& hooks) {
  const int world = comm_.world();
  const bool per_rank = o_.per_rank_loss;
  double comm_extra = 0;
  // Target-token count, before any backward: the global batch's (global normalisation), or
  // this rank's with gradients averaged over ranks (per_rank, OLMo-core's train_batch).
  int64_t local = 0;
  for (int64_t i = 0; i < B * T; ++i) local += targets[i] != olmo::kIgnoreIndex;
  int64_t counts[2] = {local, B};  // target tokens, instances of the global batch
  const bool empty_rank = timed(comm_extra, [&] {
    comm_.allreduce(counts, 2);
    return per_rank && comm_.any(local == 0);
  });
  const int64_t total = counts[0], global_instances = counts[1];
  OLMO_CHECK(total > 0, "step ", step, ": the batch has no target tokens");
  OLMO_CHECK(!empty_rank, "step ", step, ": a rank has no target tokens (per_rank loss "
             "normalisation needs some on every rank)");
  const double divisor = per_rank ? double(world) * double(local) : double(total);
  const float grad_scale = float(1.0 / divisor);

  // Micro-batch gradients (exact: each converted at once to scaled int64 fixed point;
  // fast: accumulated in fp32; ZeRO-3: each unit's gradient joins the sum inside the backward,
  // Zero3Params::grad_done). exact: a conversion overflow on any rank (a gradient beyond its
  // tensor's scale, a global-batch property) redoes the micro-batches with the raised scales.
  const bool exact = reducer_->mode() == dist::ReduceMode::exact;
  OLMO_CHECK(!zero3_ || sharded_, "TrainModule: ZeRO-3 before shard_parameters()");
  dist::i128 ce_fx = 0, z_fx = 0;
  bool loss_bad = false;
  double sums[2] = {0, 0};
  float* g = shard_grad_.empty() ? model_.grads() : shard_grad_.data();
  const size_t ng = reducer_->shard_len();
  bool grad_bad = false;
  r.reduce_redos = 0;
  // No scale known yet (a new run's first step): that pass measures the exponents.
  const auto& e0 = reducer_->scales().exponents();
  const bool measuring = exact && std::all_of(e0.begin(), e0.end(), [](int64_t e) { return e == 0; });
  for (int pass = 0;; ++pass) {
    reducer_->begin_step(global_instances);
    if (sharded_) zero3_->set_open(true);
    if (!sharded_) model_.zero_grad();
    ce_fx = z_fx = 0;
    loss_bad = false;
    sums[0] = sums[1] = 0;
    const int64_t mi = o_.micro_instances;
    for (int64_t i = 0; i < B; i += mi) {
      int64_t n = std::min(mi, B - i);
      if (exact && i > 0 && !sharded_) {
        const double tz = now_seconds();
        model_.zero_grad();
        if (profile::enabled()) profile::add("exact_zero_grad", now_seconds() - tz, 0);
      }
      kernels::LossSums s = model_.forward_backward(tokens + i * T, targets + i * T,
                                                    doc_ids ? doc_ids + i * T : nullptr, n, T,
                                                    grad_scale, z_coef_);
      if (hooks.post_backward && pass == 0) hooks.post_backward(i / mi, s);
      reducer_->touch_rows(tokens + i * T, size_t(n * T));
      if (exact) {
        ce_fx += dist::double_to_fixed(s.ce_sum, &loss_bad);
        z_fx += dist::double_to_fixed(s.z_sum, &loss_bad);
        // Conversion to fixed point + accumulator adds (sharded: + staging).
        ProfileOutsideComm prof("exact_convert", *reducer_);
        if (!sharded_) reducer_->add_micro_batch(model_.grads());
      } else {
        sums[0] += s.ce_sum;
        sums[1] += s.z_sum;
      }
    }
    if (sharded_) zero3_->set_open(false);
    // Reduce: this rank's shard of the summed gradient.
    {
      // Staging, unpacking and rounding of the step's reduction.
      ProfileOutsideComm prof("reduce_finish", *reducer_);
      grad_bad = reducer_->finish(sharded_ ? nullptr : model_.grads(), g);
    }
    if (!reducer_->redo()) break;
    ++r.reduce_redos;
    ++reduce_redos_;
    OLMO_CHECK(pass < 2, "step ", step, ": the exact reduction still overflowed after ", pass + 1,
               " redos with raised scales (internal error)");
    if (comm_.rank() == 0 && !(measuring && pass == 0))
      std::fprintf(stderr, "step %lld: exact reduction rescaled (a gradient outgrew its tensor's "
                   "scale); the step is recomputed (redo %lld of the run)\n",
                   static_cast<long long>(step), static_cast<long long>(reduce_redos_));
  }
  // Per-rank normalisation divides each rank's sums by its own count before the (exact or
  // fast) sum over ranks; global divides the global sums by the global count.
  // The loss sums' communication (either branch) counts as comm time.
  if (AddSeconds in_comm(comm_extra); exact) {
    double loc[2] = {dist::fixed_to_double(ce_fx), dist::fixed_to_double(z_fx)};
    dist::i128 v[2] = {ce_fx, z_fx};
    if (per_rank)
      for (int k = 0; k < 2; ++k) v[k] = dist::double_to_fixed(loc[k] / double(local), &loss_bad);
    loss_bad = comm_.any(loss_bad);
    comm_.allreduce(v, 2, dist::Type::i128, dist::Op::sum);
    sums[0] = loss_bad ? std::nan("") : dist::fixed_to_double(v[0]);
    sums[1] = loss_bad ? std::nan("") : dist::fixed_to_double(v[1]);
  } else {
    if (per_rank)
      for (double& x : sums) x /= double(local);
    comm_.allreduce(sums, 2, dist::Op::sum);
  }
  const double denom = per_rank ? double(world) : double(total);
  r.loss = sums[0] / denom;
  r.z_loss = double(z_coef_) * sums[1] / denom;
  r.target_tokens = total;
  if (grad_bad) std::fill(g, g + ng, std::numeric_limits<float>::quiet_NaN());

  // Global norm, clipping and the skip-step decision (identical on every rank).
  std::optional<float> norm;
  if (max_grad_norm_ > 0) {
    norm = grad_bad ? std::numeric_limits<float>::quiet_NaN()
                    : float(reducer_->global_norm(g, ng));
    optim::clip_grads_with_norm(g, ng, max_grad_norm_, *norm);
  }
  r.grad_norm = norm ? double(*norm) : std::nan("");
  // Non-finite guard (every rank decides alike: the loss sums, grad_bad and the norm are global).
  bool grad_nonfinite = grad_bad || (norm && !std::isfinite(*norm));
  if (!norm && !grad_bad) {
    bool local_bad = false;
    for (size_t i = 0; i < ng && !local_bad; ++i) local_bad = !std::isfinite(g[i]);
    grad_nonfinite = comm_.any(local_bad);
  }
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
  // Update this rank's shard, then every rank gets every shard.
  const double to = now_seconds();
  adamw_->step(sharded_ ? zero3_->shard() : model_.params() + reducer_->shard_begin(), g, r.lr,
               !apply);
  if (profile::enabled()) profile::add("optimizer", now_seconds() - to, 0);
  if (apply && !sharded_) reducer_->allgather(model_.params());
  return comm_extra;
}

}  // namespace olmo::train
