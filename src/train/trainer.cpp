// The training loop and one training step (see trainer.h). Checkpoint and HF I/O live in
// trainer_state.cpp; the standard callbacks in callbacks.cpp.
#include "train/trainer.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "ckpt/checkpoint.h"
#include "core/error.h"
#include "core/timer.h"
#include "data/mix.h"
#include "eval/lm_evaluator.h"
#include "kernels/peak.h"
#include "model/flops.h"
#include "model/hf_io.h"
#include "optim/grad_clip.h"
#include "train/model_setup.h"

namespace fs = std::filesystem;

namespace olmo::train {

static optim::ScheduleConfig schedule_config(const Config& c) {
  optim::ScheduleConfig s;
  s.name = c.scheduler.name;
  s.units = "steps";
  s.alpha_f = c.scheduler.alpha_f;
  s.warmup_min_lr = c.scheduler.warmup_min_lr;
  if (s.name != "constant") s.warmup = c.scheduler.warmup_steps;
  if (s.name == "wsd") s.decay = c.scheduler.decay_steps;
  return s;
}

Trainer::Trainer(Config cfg) : cfg_(std::move(cfg)) {
  validate(cfg_, /*check_files=*/true);
  OLMO_CHECK(cfg_.data.dataset == "fsl", "config key 'data.dataset' = '", cfg_.data.dataset,
             "': only fsl (NumpyFSLDataset) is implemented for training");
  OLMO_CHECK(cfg_.data.processes == 1, "config key 'data.processes' = ", cfg_.data.processes,
             ": this build trains in one process (gradient accumulation replaces data parallelism)");
  if (cfg_.trainer.threads > 0) omp_set_num_threads(int(cfg_.trainer.threads));
  model::ModelConfig mc = model_config(cfg_);

  lock_ = std::make_unique<ckpt::RunDirLock>(cfg_.trainer.run_dir);

  // Data.
  std::vector<std::string> paths = eval::expand_token_paths(cfg_.data.mix);
  data::FslOptions opt;
  opt.eos_id = uint32_t(cfg_.data.eos_id);
  opt.pad_id = uint32_t(cfg_.data.pad_id);
  try {
    dataset_ = std::make_unique<data::FslDataset>(paths, cfg_.data.seq_len,
                                                  uint32_t(mc.vocab_size), opt);
  } catch (const Error& e) {
    throw Error(cat("config key 'data.mix' (", cfg_.data.mix, "): ", e.what()));
  }
  int64_t G = batch_instances(cfg_);
  OLMO_CHECK(dataset_->size() >= G, "config key 'data.mix' (", cfg_.data.mix, "): ",
             dataset_->size(), " instances of ", cfg_.data.seq_len,
             " tokens, fewer than one global batch (", G, ")");
  loader_ = std::make_unique<data::DataLoader>(*dataset_, G, uint64_t(cfg_.data.seed));
  if (cfg_.trainer.hard_stop_epochs > 0) loader_->set_max_epochs(cfg_.trainer.hard_stop_epochs);
  micro_instances_ = cfg_.data.micro_batch_tokens / cfg_.data.seq_len;

  t_max_ = train::schedule_steps(cfg_);
  total_steps_ = run_steps(cfg_, loader_->batches_per_epoch());
  schedule_ = optim::make_schedule(schedule_config(cfg_));

  model_ = std::make_unique<model::Olmo3>(mc);
  flops_per_token_ = model::flops_per_token(mc, cfg_.data.seq_len);
  build_optimizer();
  skip_ = std::make_unique<optim::SkipStep>(int(cfg_.optim.rolling_interval_length),
                                            cfg_.optim.sigma_factor);

  // Starting state: resume > phase start (load_path) > HF weights > fresh init.
  auto latest = ckpt::latest_complete(cfg_.trainer.run_dir, &warnings_);
  if (latest) {
    restore(*latest, true, true, true);
    start_ = StartKind::resume;
    start_from_ = *latest;
  } else if (!cfg_.trainer.load_path.empty()) {
    std::string dir = cfg_.trainer.load_path;
    if (!fs::exists(fs::path(dir) / "COMMITTED")) {
      auto l = ckpt::latest_complete(dir, &warnings_);
      OLMO_CHECK(l, "config key 'trainer.load_path': no complete checkpoint in ", dir);
      dir = *l;
    }
    restore(dir, true, cfg_.trainer.load_optim_state, cfg_.trainer.load_trainer_state);
    start_ = StartKind::phase;
    start_from_ = dir;
  } else if (!cfg_.trainer.init_from_hf.empty()) {
    model::load_hf_weights(*model_, cfg_.trainer.init_from_hf);
    start_ = StartKind::hf_init;
    start_from_ = cfg_.trainer.init_from_hf;
  } else {
    model_->init_weights(uint64_t(cfg_.trainer.init_seed));
  }
  measure_peak();
  metrics_ = std::make_unique<MetricsLog>((fs::path(cfg_.trainer.run_dir) / "metrics.jsonl").string());
  metrics_->truncate_after(step_);  // records of steps that will be (re)run are dropped
  progress_ = std::make_unique<Progress>(total_steps_, cfg_.trainer.progress,
                                         cfg_.trainer.log_interval);
}

Trainer::~Trainer() = default;

void Trainer::build_optimizer() {
  // Contiguous runs of tensors with the same decay: OLMo 3 = [embedding | everything else].
  std::vector<optim::ParamGroup> groups;
  for (auto& p : model_->params_info()) {
    double wd = p.is_embedding ? cfg_.optim.embedding_weight_decay : cfg_.optim.weight_decay;
    std::string name = p.is_embedding ? "embeddings" : "default";
    if (!groups.empty() && groups.back().name == name &&
        groups.back().offset + groups.back().numel == p.offset) {
      groups.back().numel += p.numel;
    } else {
      groups.push_back({p.offset, p.numel, wd, name});
    }
  }
  optim::AdamWConfig ac;
  ac.beta1 = cfg_.optim.betas[0];
  ac.beta2 = cfg_.optim.betas[1];
  ac.eps = cfg_.optim.eps;
  adamw_ = std::make_unique<optim::AdamW>(model_->num_params(), groups, ac);
}

void Trainer::measure_peak() {
  if (cfg_.trainer.peak_interval >= 0) peak_gflops_ = kernels::measure_fp32_peak_gflops(0.3);
}

double Trainer::lr_at(int64_t step) const {
  return schedule_->get_lr(cfg_.optim.lr, step, t_max_);
}

void Trainer::add_callback(std::unique_ptr<Callback> cb) {
  if (callback_state_.is_object() && callback_state_.contains(cb->name()))
    cb->load(callback_state_[cb->name()]);
  callbacks_.push_back(std::move(cb));
}

std::vector<Callback*> Trainer::callbacks() {
  std::vector<Callback*> v;
  for (auto& c : callbacks_) v.push_back(c.get());
  return v;
}

StepResult Trainer::train_step() {
  double t0 = now_seconds();
  StepResult r;
  r.step = ++step_;
  OLMO_CHECK(loader_->next(batch_), "data loader exhausted before step ", step_, " (",
             loader_->batches_per_epoch(), " batches per epoch)");
  const int64_t B = batch_.B, T = batch_.T;
  targets_ = data::make_targets(batch_.tokens.data(), B, T);
  int64_t total = 0;
  for (int32_t t : targets_) total += t != data::kIgnoreIndex;
  OLMO_CHECK(total > 0, "step ", step_, ": the batch has no target tokens");
  const float grad_scale = float(1.0 / double(total));
  const float z_coef = float(cfg_.trainer.z_loss_multiplier);

  model_->zero_grad();
  double ce = 0, z = 0;
  for (int64_t i = 0; i < B; i += micro_instances_) {
    int64_t n = std::min(micro_instances_, B - i);
    kernels::LossSums s = model_->forward_backward(batch_.tokens.data() + i * T,
                                                   targets_.data() + i * T, nullptr, n, T,
                                                   grad_scale, z_coef);
    ce += s.ce_sum;
    z += s.z_sum;
  }
  r.loss = ce / double(total);
  r.z_loss = double(z_coef) * z / double(total);
  r.target_tokens = total;

  float* g = model_->grads();
  const size_t np = model_->num_params();
  std::optional<float> norm;
  if (cfg_.optim.max_grad_norm > 0) norm = optim::clip_grad_norm(g, np, cfg_.optim.max_grad_norm);
  r.grad_norm = norm ? double(*norm) : std::nan("");
  bool apply = true;
  if (cfg_.optim.name == "skip_step_adamw" && cfg_.optim.skip_step)
    apply = skip_->record(float(r.loss), norm);
  r.skipped = !apply;
  r.lr = lr_at(step_);
  adamw_->step(model_->params(), g, r.lr, !apply);

  r.batch_tokens = B * T;
  tokens_seen_ += loader_->global_batch_tokens();
  r.tokens_seen = tokens_seen_;
  r.batch_hash = batch_.global_hash;
  if (cfg_.trainer.log_batch_indices) r.instance_indices = batch_.instance_indices;
  r.seconds = now_seconds() - t0;
  r.tokens_per_s = double(loader_->global_batch_tokens()) / r.seconds;
  r.mfu = peak_gflops_ > 0 ? 100.0 * flops_per_token_ * r.tokens_per_s / (peak_gflops_ * 1e9) : 0;
  // ETA from an exponential running mean of the step time.
  recent_step_s_ = timed_steps_++ == 0 ? r.seconds : 0.9 * recent_step_s_ + 0.1 * r.seconds;
  double per = recent_step_s_;
  r.eta_s = double(total_steps_ - step_) * per;
  return r;
}

void Trainer::fit() {
  for (auto& cb : callbacks_) cb->on_start(*this);
  while (step_ < total_steps_ && !stop_) {
    StepResult r = train_step();
    if (cfg_.trainer.peak_interval > 0 && step_ % cfg_.trainer.peak_interval == 0) measure_peak();
    for (auto& cb : callbacks_) cb->on_step(*this, r);
  }
  for (auto& cb : callbacks_) cb->on_end(*this);
}

}  // namespace olmo::train
