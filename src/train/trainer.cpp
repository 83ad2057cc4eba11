// The training harness: the loop, one training step's data stage and hooks, the non-finite
// streak (see trainer.h). The setup is trainer_builder.cpp, the optimizer step train_module.cpp,
// checkpoint I/O trainer_state.cpp, the standard callbacks callbacks.cpp.
#include "train/trainer.h"

#include <nlohmann/json.hpp>

#include "ckpt/checkpoint.h"
#include "ckpt/fused_fingerprint.h"
#include "ckpt/run_lock.h"
#include "core/error.h"
#include "core/profile.h"
#include "core/timer.h"
#include "data/instance_source.h"
#include "data/mix.h"
#include "model/olmo3.h"
#include "train/metrics_log.h"
#include "train/progress.h"
#include "train/train_state.h"
#include "train/train_module.h"
#include "distributed/zero.h"
#include "optim/adamw.h"

namespace olmo::train {

nlohmann::json Callback::save() const { return nullptr; }

Trainer::~Trainer() = default;

optim::AdamW& Trainer::optimizer() { return module_->optimizer(); }
optim::SkipStep& Trainer::skip_step() { return module_->skip_step(); }
const dist::GradReducer& Trainer::reducer() const { return module_->reducer(); }
size_t Trainer::grad_shard_bytes() const { return module_->grad_shard_bytes(); }
double Trainer::lr_at(int64_t step) const { return module_->lr_at(step); }

void Trainer::add_callback(std::unique_ptr<Callback> cb) {
  if (callback_state_ && callback_state_->is_object() && callback_state_->contains(cb->name()))
    cb->load((*callback_state_)[cb->name()]);
  callbacks_.push_back(std::move(cb));
}

std::vector<Callback*> Trainer::callbacks() {
  std::vector<Callback*> v;
  for (auto& c : callbacks_) v.push_back(c.get());
  return v;
}

// Metrics record and console line of a non-finite (skipped) step.
void Trainer::on_nonfinite(const StepResult& r) {
  if (nonfinite_streak_ == 1) nonfinite_first_ = r.step;
  const int64_t k = cfg_.trainer.max_nonfinite_steps;
  metrics_->write({{"kind", "info"}, {"event", "nonfinite"}, {"step", r.step},
                   {"what", r.nonfinite_what}, {"streak", nonfinite_streak_},
                   {"max_nonfinite_steps", k}});
  progress_->message(cat("step ", r.step, ": non-finite ", r.nonfinite_what, " (loss ", r.loss,
                         ", grad norm ", r.grad_norm, "): step skipped, no update (", nonfinite_streak_,
                         " in a row", k > 0 ? cat(", the run stops at ", k) : std::string(), ")"));
}

StepResult Trainer::train_step() {
  double t0 = now_seconds();
  const double comm0 = module_->data_parallel().comm_seconds();
  StepResult r;
  r.step = ++step_;
  // 1. This rank's whole micro-batches of the global batch.
  OLMO_CHECK(loader_->next(batch_), "data loader exhausted before step ", step_, " (",
             loader_->batches_per_epoch(), " batches per epoch)");
  for (auto& cb : callbacks_) cb->pre_step(*this, batch_);
  const int64_t B = batch_.B, T = batch_.T;
  targets_.resize(size_t(B * T));
  if (doc_mask_) doc_ids_.resize(size_t(B * T));
  data::batch_targets(*dataset_, batch_.instance_indices, batch_.tokens.data(), B, T,
                      targets_.data(), doc_mask_ ? doc_ids_.data() : nullptr);
  if (profile::enabled()) profile::add("data", now_seconds() - t0, 0);
  // 2.-6. The optimizer step (train_module.h), with the hooks inside it.
  TrainModule::Hooks hooks;
  hooks.post_backward = [this](int64_t micro, kernels::LossSums& s) {
    for (auto& cb : callbacks_) cb->post_backward(*this, micro, s);
  };
  hooks.unit_grad_done = [this](int64_t micro, size_t a, size_t b) {
    for (auto& cb : callbacks_) cb->unit_grad_done(*this, micro, a, b);
  };
  hooks.pre_optim = [this](const StepResult& sr) {
    for (auto& cb : callbacks_) cb->pre_optim(*this, sr);
  };
  // The state fingerprint's tensor sums, added by the optimizer block by block while each
  // block is in cache (ckpt/fused_fingerprint.h).
  const ckpt::FlatLayout layout = param_layout(*model_);
  ckpt::FusedTensorFingerprint fused([&](StateVisitor& v) { visit_state(v, {}); }, layout,
                                     module_->optimizer().shard_begin(),
                                     module_->optimizer().shard_end());
  hooks.optim_block_done = [&fused](size_t a, size_t b) { fused.add(a, b); };
  module_->train_batch(batch_.tokens.data(), targets_.data(),
                       doc_mask_ ? doc_ids_.data() : nullptr, B, T, step_, r, hooks);
  r.streamed_units = module_->reducer().streamed_units();
  r.embed_rows_skipped = module_->reducer().skipped_rows();
  nonfinite_streak_ = r.nonfinite ? nonfinite_streak_ + 1 : 0;
  if (r.nonfinite && metrics_) on_nonfinite(r);

  r.batch_tokens = loader_->global_batch_tokens();
  tokens_seen_ += loader_->global_batch_tokens();
  r.tokens_seen = tokens_seen_;
  {  // the state fingerprint after this step (state_digest), inside the step's time
    const double tf = now_seconds();
    r.state_fingerprint = state_digest(&fused);
    if (profile::enabled()) profile::add("fingerprint", now_seconds() - tf, 0);
  }
  r.batch_hash = batch_.global_hash;
  if (cfg_.trainer.log_batch_indices) r.instance_indices = batch_.instance_indices;
  const double t1 = now_seconds();
  r.seconds = t1 - t0;
  r.comm_seconds = module_->data_parallel().comm_seconds() - comm0;
  if (profile::enabled()) profile::add("comm", r.comm_seconds, 0);
  r.step_tokens_per_s = double(r.batch_tokens) / r.seconds;
  ++segment_steps_;
  segment_tokens_ += r.batch_tokens;
  segment_train_s_ += r.seconds;
  for (auto& cb : callbacks_) cb->post_step(*this, r);
  // Wall clock, after the post_step hooks (their records are then never later than the step's
  // "time"): the span since the previous step's end (or fit()'s start), callbacks included.
  const double end = clock_.seconds();
  r.span_seconds = end - span_end_;
  span_end_ = end;
  r.time = clock_.unix_time(end);
  r.tokens_per_s = double(r.batch_tokens) / r.span_seconds;
  r.mfu = mfu(r.tokens_per_s);  // against the run's peak (trainer_throughput.cpp)
  // ETA from an exponential running mean of the wall-clock span per step.
  recent_step_s_ = timed_steps_++ == 0 ? r.span_seconds
                                       : 0.9 * recent_step_s_ + 0.1 * r.span_seconds;
  r.eta_s = double(total_steps_ - step_) * recent_step_s_;
  return r;
}

// trainer.max_nonfinite_steps in a row: the run stops with an error naming the newest
// complete checkpoint (not re-hashed here: restarts verify and fall back).
void Trainer::stop_on_nonfinite_streak() {
  const int64_t k = cfg_.trainer.max_nonfinite_steps;
  if (k <= 0 || nonfinite_streak_ < k) return;
  const auto steps = rank_ == 0 ? ckpt::list_checkpoints(cfg_.trainer.run_dir) : std::vector<int64_t>{};
  std::string newest = steps.empty() ? std::string() : cat(cfg_.trainer.run_dir, "/step", steps.back());
  comm_->broadcast(newest, 0);
  metrics_->write({{"kind", "info"}, {"event", "nonfinite_stop"}, {"step", step_},
                   {"first", nonfinite_first_}, {"newest_checkpoint", newest}});
  throw Error(cat("step ", step_, ": the loss or gradient has been non-finite (NaN/Inf) for ",
                  nonfinite_streak_, " consecutive steps (", nonfinite_first_, "..", step_,
                  ", all skipped: no update), trainer.max_nonfinite_steps = ", k,
                  "; stopping. The weights never saw them; the newest complete checkpoint is ",
                  newest.empty() ? std::string("none") : newest,
                  " (lower optim.lr, check the data of those steps, then restart)"));
}

void Trainer::fit() {
  clock_.start();
  span_end_ = 0;
  for (; resumed_callbacks_ < callbacks_.size(); ++resumed_callbacks_)
    callbacks_[resumed_callbacks_]->on_resume(*this);
  for (auto& cb : callbacks_) cb->on_start(*this);
  while (step_ < total_steps_ && !stop_) {
    StepResult r = train_step();
    if (cfg_.trainer.peak_interval > 0 && step_ % cfg_.trainer.peak_interval == 0) measure_peak();
    for (auto& cb : callbacks_) cb->on_step(*this, r);
    note_peak_raise();  // after the step's record (its "time" is the span's end)
    // A checkpoint that fell due during a non-finite streak: written at the first finite step.
    if (ckpt_deferred_ && nonfinite_streak_ == 0) progress_->message("checkpoint " + save_checkpoint());
    stop_on_nonfinite_streak();
  }
  finishing_ = true;
  for (auto& cb : callbacks_) cb->on_end(*this);
  if (ckpt_deferred_) progress_->message("checkpoint " + save_checkpoint());
  write_summary();
}

}  // namespace olmo::train
