// The training loop and one training step (see trainer.h). Checkpoint and HF I/O live in
// trainer_state.cpp; the standard callbacks in callbacks.cpp.
#include "train/trainer.h"

#include <omp.h>

#include <algorithm>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include "ckpt/checkpoint.h"
#include "core/error.h"
#include "core/profile.h"
#include "core/timer.h"
#include "distributed/fixed_point.h"
#include "data/mix.h"
#include "kernels/peak.h"
#include "model/flops.h"
#include "model/hf_io.h"
#include "optim/grad_clip.h"
#include "train/model_setup.h"
#include "train/optimizer_setup.h"
#include "train/resource_limits.h"
#include "train/training_data.h"

namespace fs = std::filesystem;

namespace olmo::train {

optim::ScheduleConfig schedule_config(const Config& c) {
  optim::ScheduleConfig s;
  s.name = c.scheduler.name;
  s.units = "steps";
  s.alpha_f = c.scheduler.alpha_f;
  s.warmup_min_lr = c.scheduler.warmup_min_lr;
  if (s.name != "constant") s.warmup = c.scheduler.warmup_steps;
  if (s.name == "wsd") s.decay = c.scheduler.decay_steps;
  return s;
}

// Threads per process when nothing says otherwise: the cores shared among this node's ranks.
static int default_threads(int world) {
  if (world <= 1 || std::getenv("OMP_NUM_THREADS")) return 0;
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const int ranks_here = local ? std::max(1, std::atoi(local)) : world;
  return std::max(1, omp_get_num_procs() / ranks_here);
}

Trainer::Trainer(Config cfg) : cfg_(std::move(cfg)) {
  comm_ = &dist::world_communicator();
  rank_ = comm_->rank();
  world_ = comm_->world();
  validate(cfg_, /*check_files=*/true);
  OLMO_CHECK(cfg_.data.processes == 0 || cfg_.data.processes == world_,
             "config key 'data.processes' = ", cfg_.data.processes, " but the job runs ", world_,
             " process", world_ == 1 ? "" : "es", " (mpirun -np ", world_,
             "); set data.processes=0 (the launched world) or ", world_);
  cfg_.data.processes = world_;
  const int threads = cfg_.trainer.threads > 0 ? int(cfg_.trainer.threads) : default_threads(world_);
  if (threads > 0) omp_set_num_threads(threads);
  model::ModelConfig mc = model_config_for_this_cpu(cfg_);
  // precision: auto is probed in each process; all ranks must run one precision (the reduction
  // and the trajectory assume it), so bf16_mixed only where every rank chose it.
  if (world_ > 1 && cfg_.model.precision == "auto") {
    const bool fp32_somewhere = comm_->any(mc.precision != model::Precision::bf16_mixed);
    if (fp32_somewhere) {
      if (rank_ == 0 && mc.precision == model::Precision::bf16_mixed)
        std::fprintf(stderr, "precision: auto -> fp32 on all %d processes (another rank's CPU "
                     "or probe chose fp32)\n", world_);
      mc.precision = model::Precision::fp32;
    }
  }
  micro_instances_ = cfg_.data.micro_batch_tokens / cfg_.data.seq_len;
  const int64_t G = batch_instances(cfg_);
  const int64_t M = G / micro_instances_;  // micro-batches per global batch
  OLMO_CHECK(world_ <= G, "mpirun -np ", world_, ": more processes than instances in a global ",
             "batch (data.global_batch_tokens / data.seq_len = ", G, ")");
  OLMO_CHECK(M % world_ == 0, "mpirun -np ", world_, " does not divide the ", M,
             " micro-batches of a step (data.global_batch_tokens / data.micro_batch_tokens = ",
             cfg_.data.global_batch_tokens, " / ", cfg_.data.micro_batch_tokens,
             "): every process must run the same number of micro-batches");
  const dist::ReduceMode mode = dist::parse_reduce_mode(cfg_.dist.reduce);
  OLMO_CHECK(mode != dist::ReduceMode::exact || M <= dist::kMaxMicroBatches,
             "config key 'dist.reduce' = exact supports at most ", dist::kMaxMicroBatches,
             " micro-batches per step, this config has ", M, " (use dist.reduce=fast)");

  exact_local_ = dist::local_accumulator(cfg_.dist.exact_accumulator, world_, M / world_);
  // Memory plan vs available memory, before the run dir or any large buffer is touched.
  if (cfg_.trainer.check_memory) check_memory(mc, mode == dist::ReduceMode::exact, M / world_);
  parse_test_nan();

  // Rank 0 holds the run-dir lock for the whole job.
  if (rank_ == 0) lock_ = std::make_unique<ckpt::RunDirLock>(cfg_.trainer.run_dir);
  comm_->barrier();

  // Data.
  data::DatasetSpec spec = dataset_spec(cfg_, uint32_t(mc.vocab_size));  // train/training_data.h
  const std::string& ln = cfg_.trainer.loss_normalization;
  per_rank_loss_ = ln == "per_rank" || (ln == "auto" && spec.kind == "packed_fsl");
  doc_mask_ = cfg_.data.generate_doc_lengths;
  try {
    dataset_ = data::open_instance_source(spec);
  } catch (const Error& e) {
    throw Error(cat("config key 'data.mix' (", cfg_.data.mix, "): ", e.what()));
  }
  OLMO_CHECK(dataset_->size() >= G, "config key 'data.mix' (", cfg_.data.mix, "): ",
             dataset_->size(), " instances of ", cfg_.data.seq_len,
             " tokens, fewer than one global batch (", G, ")");
  loader_ = std::make_unique<data::DataLoader>(*dataset_, G, uint64_t(cfg_.data.seed), rank_,
                                               world_);
  // Whole micro-batches per rank: micro-batch j of the global batch is the same instances for
  // every world size.
  loader_->set_rank_chunk(micro_instances_);
  if (cfg_.trainer.hard_stop_epochs > 0) loader_->set_max_epochs(cfg_.trainer.hard_stop_epochs);

  t_max_ = train::schedule_steps(cfg_);
  total_steps_ = run_steps(cfg_, loader_->batches_per_epoch());
  schedule_ = optim::make_schedule(schedule_config(cfg_));

  model_ = std::make_unique<model::Olmo3>(mc);
  flops_per_token_ = model::flops_per_token(mc, cfg_.data.seq_len);
  const size_t bucket = size_t(cfg_.dist.bucket_mb) * (1u << 20) / sizeof(float);
  reducer_ = std::make_unique<dist::GradReducer>(*comm_, model_->num_params(), mode, bucket,
                                                 exact_local_);
  if (!(mode == dist::ReduceMode::fast && world_ == 1)) shard_grad_.assign(reducer_->shard_len(), 0.0f);
  build_optimizer();
  skip_ = std::make_unique<optim::SkipStep>(int(cfg_.optim.rolling_interval_length),
                                            cfg_.optim.sigma_factor);

  // Starting state: resume > phase start (load_path) > HF weights > fresh init. Rank 0 chooses
  // (so every rank restores the same checkpoint) and tells the others.
  std::string latest, phase_dir;
  if (rank_ == 0) {
    auto l = ckpt::latest_complete(cfg_.trainer.run_dir, &warnings_);
    if (l) latest = *l;
    if (!l && !cfg_.trainer.load_path.empty()) {
      phase_dir = cfg_.trainer.load_path;
      if (!fs::exists(fs::path(phase_dir) / "COMMITTED")) {
        auto p = ckpt::latest_complete(phase_dir, &warnings_);
        phase_dir = p ? *p : "";
      }
    }
  }
  comm_->broadcast(latest, 0);
  comm_->broadcast(phase_dir, 0);
  if (!latest.empty()) {
    restore(latest, true, true, true, /*resume=*/true);
    start_ = StartKind::resume;
    start_from_ = latest;
  } else if (!cfg_.trainer.load_path.empty()) {
    OLMO_CHECK(!phase_dir.empty(), "config key 'trainer.load_path': no complete checkpoint in ",
               cfg_.trainer.load_path);
    restore(phase_dir, true, cfg_.trainer.load_optim_state, cfg_.trainer.load_trainer_state,
            /*resume=*/false);
    start_ = StartKind::phase;
    start_from_ = phase_dir;
  } else if (!cfg_.trainer.init_from_hf.empty()) {
    model::load_hf_weights(*model_, cfg_.trainer.init_from_hf);
    start_ = StartKind::hf_init;
    start_from_ = cfg_.trainer.init_from_hf;
  } else {
    model_->init_weights(uint64_t(cfg_.trainer.init_seed));
  }
  maybe_test_kill("start");
  measure_peak();
  const std::string mpath = (fs::path(cfg_.trainer.run_dir) / "metrics.jsonl").string();
  metrics_ = std::make_unique<MetricsLog>(rank_ == 0 ? mpath : std::string());
  // Records of steps that will be (re)run are dropped: on a resume from step N those after N
  // (records of N were written before its checkpoint); otherwise (no checkpoint: an earlier
  // attempt that was killed before its first one) those from the starting step on.
  metrics_->truncate_after(start_ == StartKind::resume ? step_ : step_ - 1);
  if (!schedule_change_.is_null()) {
    metrics_->write(schedule_change_);
    warnings_.push_back(cat("the LR schedule changed at this resume (trainer.allow_schedule_change): ",
                            schedule_change_["changed"].get<std::string>()));
  }
  progress_ = std::make_unique<Progress>(total_steps_, rank_ == 0 ? cfg_.trainer.progress : "silent",
                                         cfg_.trainer.log_interval);
}

Trainer::~Trainer() = default;

void Trainer::build_optimizer() {
  const auto groups = param_groups(*model_, cfg_.optim);  // train/optimizer_setup.h
  const optim::AdamWConfig ac = adamw_config(cfg_.optim);
  const size_t lo = reducer_->shard_begin();
  adamw_ = std::make_unique<optim::AdamW>(model_->num_params(), groups, ac, lo,
                                          lo + reducer_->shard_len());
}

void Trainer::measure_peak() {
  if (cfg_.trainer.peak_interval < 0) return;
  // Both peaks at the start (the log header shows both); later only the one MFU uses: the fp32
  // FMA peak, or the bf16 dot-product peak when the matmuls run in bf16 (bf16_mixed).
  const bool bf16 = model_->precision() == model::Precision::bf16_mixed;
  const bool first = peak_fp32_gflops_ == 0 && peak_bf16_gflops_ == 0;
  if (first || !bf16) peak_fp32_gflops_ = kernels::measure_fp32_peak_gflops(0.3);
  if (first || bf16) peak_bf16_gflops_ = kernels::measure_bf16_peak_gflops(first && !bf16 ? 0.1 : 0.3, 0);
  peak_gflops_ = bf16 ? peak_bf16_gflops_ : peak_fp32_gflops_;
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

// Test-only fault switch: OLMO_TEST_KILL="<where>:<rank>:<step>" makes that rank SIGKILL
// itself at `where` (start = right after the starting state is restored, step = the step it
// starts from; step = after its first micro-batch of that step, ckpt = after writing its
// checkpoint shard data, before it is closed) -- the crash tests of tests/distributed and the kill
// campaign of tests/train.
void Trainer::maybe_test_kill(const char* where) {
  static const char* spec = std::getenv("OLMO_TEST_KILL");
  if (!spec) return;
  char w[16] = {0};
  int r = -1;
  long long s = -1;
  if (std::sscanf(spec, "%15[^:]:%d:%lld", w, &r, &s) == 3 && std::string(w) == where &&
      r == rank_ && s == step_) {
    std::fprintf(stderr, "OLMO_TEST_KILL: rank %d kills itself at %s of step %lld\n", r, w, s);
    std::fflush(stderr);
    std::raise(SIGKILL);
  }
}

void Trainer::check_memory(const model::ModelConfig& mc, bool exact, int64_t micro_batches) {
  model::MemoryPlan mp = model::memory_plan(mc, cfg_.data.seq_len, micro_instances_, world_,
                                            exact, micro_batches, exact_local_);
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const int64_t here = local ? std::max(1, std::atoi(local)) : 1;
  // dist.exact_accumulator auto: the sharded accumulator (16 B per parameter / W) where the
  // local one (16 B per parameter) would not fit; the same bits either way.
  // Decided together (ranks on different nodes may see different memory).
  const int64_t avail = available_memory().bytes;
  if (exact && exact_local_ && world_ > 1 && cfg_.dist.exact_accumulator == "auto" &&
      comm_->any(avail >= 0 && double(mp.total) * double(here) > double(avail))) {
    exact_local_ = false;
    mp = model::memory_plan(mc, cfg_.data.seq_len, micro_instances_, world_, exact,
                            micro_batches, false);
    if (rank_ == 0)
      std::fprintf(stderr, "dist.exact_accumulator auto: the local accumulator does not fit the "
                           "available memory, using the sharded one\n");
  }
  auto mib = [](int64_t b) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f MiB", double(b) / double(1 << 20));
    return std::string(buf);
  };
  check_memory_plan(mp.total, here,
                    cat("weights ", mib(mp.weights), ", gradients ", mib(mp.grads),
                        ", AdamW moments ", mib(mp.adam_moments), ", gradient shard ",
                        mib(mp.grad_shard), ", exact accumulator ", mib(mp.reduce_accumulator),
                        ", activations ", mib(mp.activations), " for micro-batches of ",
                        micro_instances_, " x ", cfg_.data.seq_len, " tokens"));
}

void Trainer::parse_test_nan() {
  const char* spec = std::getenv("OLMO_TEST_NAN");
  if (!spec || !*spec) return;
  OLMO_CHECK(cfg_.allow_fault_injection, "OLMO_TEST_NAN = '", spec,
             "' is refused: it puts NaN/Inf into training on purpose (a test switch) and needs "
             "allow_fault_injection: true in the config");
  char kind[16] = {0};
  long long step = 0, count = 1;
  int rank = 0;
  const int n = std::sscanf(spec, "%15[^:]:%lld:%lld:%d", kind, &step, &count, &rank);
  const std::string k = kind;
  OLMO_CHECK(n >= 2 && step >= 1 && count >= 1 && rank >= 0 &&
                 (k == "loss" || k == "grad" || k == "loss_inf" || k == "grad_inf" ||
                  k == "zloss" || k == "zloss_inf" || k == "weight"),
             "OLMO_TEST_NAN = '", spec, "': expected KIND:STEP[:COUNT[:RANK]] with KIND loss, "
             "grad, loss_inf, grad_inf, zloss, zloss_inf or weight, STEP and COUNT >= 1");
  test_nan_ = {k, step, count, rank};
  if (rank_ == 0)
    std::fprintf(stderr, "OLMO_TEST_NAN: %s on rank %d at steps %lld..%lld\n", kind, rank, step,
                 step + count - 1);
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
  const double comm0 = reducer_->comm_seconds();
  double comm_extra = 0;
  StepResult r;
  r.step = ++step_;
  // 1. This rank's whole micro-batches of the global batch.
  OLMO_CHECK(loader_->next(batch_), "data loader exhausted before step ", step_, " (",
             loader_->batches_per_epoch(), " batches per epoch)");
  if (batch_hook_) batch_hook_(*this, batch_);
  const int64_t B = batch_.B, T = batch_.T;
  targets_.resize(size_t(B * T));
  if (doc_mask_) doc_ids_.resize(size_t(B * T));
  data::batch_targets(*dataset_, batch_.instance_indices, batch_.tokens.data(), B, T,
                      targets_.data(), doc_mask_ ? doc_ids_.data() : nullptr);
  if (profile::enabled()) profile::add("data", now_seconds() - t0, 0);
  // 2. Target-token count, before any backward: the global batch's (global normalisation), or
  //    this rank's with gradients averaged over ranks (per_rank, OLMo-core's train_batch).
  int64_t local = 0;
  for (int32_t t : targets_) local += t != olmo::kIgnoreIndex;
  int64_t total = local;
  double tc = now_seconds();
  comm_->allreduce(&total, 1);
  const bool empty_rank = per_rank_loss_ && comm_->any(local == 0);
  comm_extra += now_seconds() - tc;
  OLMO_CHECK(total > 0, "step ", step_, ": the batch has no target tokens");
  OLMO_CHECK(!empty_rank, "step ", step_, ": a rank has no target tokens (per_rank loss "
             "normalisation needs some on every rank)");
  const double divisor = per_rank_loss_ ? double(world_) * double(local) : double(total);
  const float grad_scale = float(1.0 / divisor);
  const float z_coef = float(cfg_.trainer.z_loss_multiplier);

  // 3. Micro-batch gradients (exact: each reduced at once in fixed point; fast: accumulated).
  const bool exact = reducer_->mode() == dist::ReduceMode::exact;
  reducer_->begin_step();
  model_->zero_grad();
  dist::i128 ce_fx = 0, z_fx = 0;
  bool loss_bad = false;
  double sums[2] = {0, 0};
  for (int64_t i = 0; i < B; i += micro_instances_) {
    int64_t n = std::min(micro_instances_, B - i);
    if (exact && i > 0) {
      const double tz = now_seconds();
      model_->zero_grad();
      if (profile::enabled()) profile::add("exact_zero_grad", now_seconds() - tz, 0);
    }
    kernels::LossSums s = model_->forward_backward(
        batch_.tokens.data() + i * T, targets_.data() + i * T,
        doc_mask_ ? doc_ids_.data() + i * T : nullptr, n, T, grad_scale, z_coef);
    if (i == 0) maybe_test_kill("step");
    if (i == 0 && test_nan_.active(step_, rank_)) {
      const float bad = test_nan_.kind.find("inf") != std::string::npos
                            ? std::numeric_limits<float>::infinity()
                            : std::numeric_limits<float>::quiet_NaN();
      if (test_nan_.kind.rfind("loss", 0) == 0) s.ce_sum = double(bad);
      if (test_nan_.kind.rfind("zloss", 0) == 0) s.z_sum = double(bad);
      if (test_nan_.kind.rfind("grad", 0) == 0) model_->grads()[model_->num_params() / 2 + 17] = bad;
    }
    if (exact) {
      ce_fx += dist::double_to_fixed(s.ce_sum, &loss_bad);
      z_fx += dist::double_to_fixed(s.z_sum, &loss_bad);
      const double ta = now_seconds(), ca = reducer_->comm_seconds();
      reducer_->add_micro_batch(model_->grads());
      // Conversion to fixed point + accumulator adds (sharded: + staging; its waits are "comm").
      if (profile::enabled())
        profile::add("exact_convert", now_seconds() - ta - (reducer_->comm_seconds() - ca), 0);
    } else {
      sums[0] += s.ce_sum;
      sums[1] += s.z_sum;
    }
  }
  // 4. Reduce: this rank's shard of the summed gradient; global loss sums.
  float* g = shard_grad_.empty() ? model_->grads() : shard_grad_.data();
  const size_t ng = reducer_->shard_len();
  const double tf = now_seconds(), cf = reducer_->comm_seconds();
  const bool grad_bad = reducer_->finish(model_->grads(), g);
  // Staging, unpacking and rounding of the step's reduction (its waits are "comm").
  if (profile::enabled())
    profile::add("reduce_finish", now_seconds() - tf - (reducer_->comm_seconds() - cf), 0);
  tc = now_seconds();
  // Per-rank normalisation divides each rank's sums by its own count before the (exact or
  // fast) sum over ranks; global divides the global sums by the global count.
  if (exact) {
    double loc[2] = {dist::fixed_to_double(ce_fx), dist::fixed_to_double(z_fx)};
    dist::i128 v[2] = {ce_fx, z_fx};
    if (per_rank_loss_)
      for (int k = 0; k < 2; ++k) v[k] = dist::double_to_fixed(loc[k] / double(local), &loss_bad);
    loss_bad = comm_->any(loss_bad);
    comm_->allreduce(v, 2, dist::Type::i128, dist::Op::sum);
    sums[0] = loss_bad ? std::nan("") : dist::fixed_to_double(v[0]);
    sums[1] = loss_bad ? std::nan("") : dist::fixed_to_double(v[1]);
  } else {
    if (per_rank_loss_)
      for (double& x : sums) x /= double(local);
    comm_->allreduce(sums, 2, dist::Op::sum);
  }
  comm_extra += now_seconds() - tc;
  const double denom = per_rank_loss_ ? double(world_) : double(total);
  r.loss = sums[0] / denom;
  r.z_loss = double(z_coef) * sums[1] / denom;
  r.target_tokens = total;
  if (grad_bad) std::fill(g, g + ng, std::numeric_limits<float>::quiet_NaN());

  // 5. Global norm, clipping and the skip-step decision (identical on every rank).
  std::optional<float> norm;
  if (cfg_.optim.max_grad_norm > 0) {
    norm = grad_bad ? std::numeric_limits<float>::quiet_NaN()
                    : float(reducer_->global_norm(g, ng));
    optim::clip_grads_with_norm(g, ng, cfg_.optim.max_grad_norm, *norm);
  }
  r.grad_norm = norm ? double(*norm) : std::nan("");
  // Non-finite guard (every rank decides alike: the loss sums, grad_bad and the norm are global).
  bool grad_nonfinite = grad_bad || (norm && !std::isfinite(*norm));
  if (!norm && !grad_bad) {
    bool local_bad = false;
    for (size_t i = 0; i < ng && !local_bad; ++i) local_bad = !std::isfinite(g[i]);
    grad_nonfinite = comm_->any(local_bad);
  }
  const bool loss_nonfinite = !std::isfinite(r.loss) || !std::isfinite(r.z_loss);
  r.nonfinite = grad_nonfinite || loss_nonfinite;
  if (r.nonfinite)
    r.nonfinite_what = loss_nonfinite && grad_nonfinite ? "loss and gradient"
                                                        : (loss_nonfinite ? "loss" : "gradient");
  bool apply = !r.nonfinite;
  // The skip-step window sees finite steps only (a NaN in it would skip every step after it).
  if (apply && cfg_.optim.name == "skip_step_adamw" && cfg_.optim.skip_step)
    apply = skip_->record(float(r.loss), norm);
  r.skipped = !apply;
  nonfinite_streak_ = r.nonfinite ? nonfinite_streak_ + 1 : 0;
  r.lr = lr_at(step_);
  // 6. Update this rank's shard, then every rank gets every shard.
  const double to = now_seconds();
  adamw_->step(model_->params() + reducer_->shard_begin(), g, r.lr, !apply);
  if (profile::enabled()) profile::add("optimizer", now_seconds() - to, 0);
  if (apply) reducer_->allgather(model_->params());
  if (test_nan_.kind == "weight" && test_nan_.active(step_, rank_))
    model_->params()[reducer_->shard_begin() + 3] = std::numeric_limits<float>::quiet_NaN();
  if (r.nonfinite && metrics_) on_nonfinite(r);

  r.batch_tokens = loader_->global_batch_tokens();
  tokens_seen_ += loader_->global_batch_tokens();
  r.tokens_seen = tokens_seen_;
  r.batch_hash = batch_.global_hash;
  if (cfg_.trainer.log_batch_indices) r.instance_indices = batch_.instance_indices;
  r.seconds = now_seconds() - t0;
  r.comm_seconds = reducer_->comm_seconds() - comm0 + comm_extra;
  if (profile::enabled()) profile::add("comm", r.comm_seconds, 0);
  r.tokens_per_s = double(loader_->global_batch_tokens()) / r.seconds;
  // MFU against the peak of every process (each measured its own, with its threads), of the
  // precision the matmuls run in (measure_peak).
  r.mfu = peak_gflops_ > 0 ? 100.0 * flops_per_token_ * r.tokens_per_s /
                                 (peak_gflops_ * double(world_) * 1e9)
                           : 0;
  // ETA from an exponential running mean of the step time.
  recent_step_s_ = timed_steps_++ == 0 ? r.seconds : 0.9 * recent_step_s_ + 0.1 * r.seconds;
  double per = recent_step_s_;
  r.eta_s = double(total_steps_ - step_) * per;
  return r;
}

void Trainer::fit() {
  for (auto& cb : callbacks_) cb->on_start(*this);
  // Step profile (trainer.profile): steps after the first only; callbacks (evaluation,
  // checkpoints) run with the profiler off, so the table covers train_step alone.
  const bool prof = cfg_.trainer.profile;
  double prof_seconds = 0;
  int64_t prof_steps = -1;
  while (step_ < total_steps_ && !stop_) {
    if (prof) profile::enable(prof_steps >= 0);
    StepResult r = train_step();
    if (prof) {
      profile::enable(false);
      if (++prof_steps > 0) prof_seconds += r.seconds;
    }
    if (cfg_.trainer.peak_interval > 0 && step_ % cfg_.trainer.peak_interval == 0) measure_peak();
    for (auto& cb : callbacks_) cb->on_step(*this, r);
    // A checkpoint that fell due during a non-finite streak: written at the first finite step.
    if (ckpt_deferred_ && nonfinite_streak_ == 0) progress_->message("checkpoint " + save_checkpoint());
    const int64_t k = cfg_.trainer.max_nonfinite_steps;
    if (k > 0 && nonfinite_streak_ >= k) {
      // Newest committed one (not re-hashed here: restarts verify and fall back).
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
  }
  if (prof && prof_steps > 0) {
    const std::string t = profile::table(prof_seconds, prof_steps);
    progress_->message(cat("step profile, rank ", rank_, ", mean of ", prof_steps,
                           " steps (first step excluded):\n", t));
    if (metrics_) {
      nlohmann::json rows = nlohmann::json::array();
      for (const profile::Row& row : profile::rows())
        rows.push_back({{"op", row.key}, {"class", row.klass}, {"seconds", row.seconds / prof_steps},
                        {"flops", row.flops / prof_steps}, {"calls", row.calls / prof_steps}});
      metrics_->write({{"kind", "profile"}, {"steps", prof_steps},
                       {"step_seconds", prof_seconds / prof_steps}, {"rows", rows}});
    }
  }
  finishing_ = true;
  for (auto& cb : callbacks_) cb->on_end(*this);
  if (ckpt_deferred_) progress_->message("checkpoint " + save_checkpoint());
}

}  // namespace olmo::train
