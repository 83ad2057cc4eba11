// Standard callbacks (see callbacks.h).
#include "monitor/callbacks.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/file_io.h"
#include "core/hash.h"
#include "monitor/audit_callback.h"
#include "monitor/benchmark_callback.h"
#include "monitor/olmo_benchmark_callback.h"
#include "monitor/param_rms.h"
#include "monitor/validation.h"
#include "distributed/communicator.h"
#include "distributed/zero.h"
#include "model/olmo3.h"
#include "optim/adamw.h"
#include "train/metrics_log.h"
#include "train/progress.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace olmo::train {

static const char* start_name(StartKind k) {
  switch (k) {
    case StartKind::fresh: return "fresh";
    case StartKind::hf_init: return "hf_init";
    case StartKind::phase: return "phase";
    case StartKind::resume: return "resume";
  }
  return "?";
}

// JSON number or null for NaN/inf (JSON has no NaN).
static json num(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }

void ConfigSaver::on_start(Trainer& t) {
  if (t.rank() != 0) return;
  write_file_atomic((fs::path(t.run_dir()) / "config.yaml").string(), to_yaml(t.config()));
}

void MetricsLogger::on_start(Trainer& t) {
  const auto& mc = t.model().config();
  // Per-rank resident state (ZeRO: optimizer moments and the reduced-gradient shard fall as 1/W).
  std::vector<int64_t> opt_bytes(size_t(t.world()), 0), red_bytes(size_t(t.world()), 0),
      shard_bytes(size_t(t.world()), 0);
  opt_bytes[size_t(t.rank())] = int64_t(t.optimizer().state_bytes());
  red_bytes[size_t(t.rank())] = int64_t(t.reducer().buffer_bytes());
  shard_bytes[size_t(t.rank())] = int64_t(t.grad_shard_bytes());
  t.comm().allreduce(opt_bytes.data(), opt_bytes.size());
  t.comm().allreduce(red_bytes.data(), red_bytes.size());
  t.comm().allreduce(shard_bytes.data(), shard_bytes.size());
  json rec = {{"kind", "info"},
              {"event", "start"},
              {"world", t.world()},
              {"dist_backend", t.comm().backend()},
              {"dist_reduce", choice_name(t.config().dist.reduce)},
              {"exact_accumulator", t.reducer().mode() == dist::ReduceMode::fast
                                        ? "none" : (t.reducer().local() ? "local" : "sharded")},
              {"optimizer_state_bytes_per_rank", opt_bytes},
              {"reducer_bytes_per_rank", red_bytes},
              {"grad_shard_bytes_per_rank", shard_bytes},
              {"step", t.step()},
              {"start", start_name(t.start_kind())},
              {"from", t.start_from()},
              {"total_steps", t.total_steps()},
              {"t_max", t.schedule_steps()},
              {"params", t.model().num_params()},
              {"flops_per_token", t.flops_per_token()},
              {"peak_gflops", t.peak_gflops()},
              {"peak_fp32_gflops", t.peak_fp32_gflops()},
              {"peak_bf16_gflops", t.peak_bf16_gflops()},
              {"peak_fp32_theoretical_gflops", t.fma_theory().gflops > 0
                                                   ? json(t.fma_theory().gflops) : json(nullptr)},
              {"peak_fp32_theoretical", t.fma_theory().text},
              {"precision", model::precision_name(t.model().precision())},
              {"seq_len", t.config().data.seq_len},
              {"global_batch_tokens", t.config().data.global_batch_tokens},
              {"d_model", mc.d_model},
              {"n_layers", mc.n_layers},
              {"time", t.clock().unix_time(0)}};  // the first wall-clock span starts here
  t.metrics().write(rec);
  for (auto& w : t.warnings()) t.progress().message("warning: " + w);
  std::string from = t.start_from().empty() ? "" : " from " + t.start_from();
  t.progress().message(cat("train: ", t.config().name, ": ", start_name(t.start_kind()), from,
                           " at step ", t.step(), "/", t.total_steps(), ", ",
                           t.model().num_params(), " params, ",
                           t.config().data.global_batch_tokens, " tokens/step, ",
                           t.world(), t.world() == 1 ? " process" : " processes", " (",
                           t.comm().backend(), ", reduce ", choice_name(t.config().dist.reduce),
                           "), ", model::precision_name(t.model().precision()),
                           ", peaks fp32 ", int(t.peak_fp32_gflops()),
                           t.config().trainer.peak_interval < 0
                               ? std::string()
                               : " (theoretical " + t.fma_theory().text + ")",
                           " / bf16 ",
                           t.peak_bf16_gflops() > 0 ? cat(int(t.peak_bf16_gflops()))
                                                    : std::string("none (no AVX512_BF16)"),
                           " GFLOP/s (MFU vs ",
                           t.model().precision() == model::Precision::bf16_mixed ? "bf16" : "fp32",
                           ")",
                           t.world() > 1 ? " per process" : ""));
}

void MetricsLogger::on_step(Trainer& t, const StepResult& r) {
  json rec = {{"kind", "train"},
              {"step", r.step},
              {"loss", num(r.loss)},
              {"z_loss", num(r.z_loss)},
              {"grad_norm", num(r.grad_norm)},
              {"lr", r.lr},
              {"skipped", r.skipped},
              {"tokens", r.batch_tokens},
              {"target_tokens", r.target_tokens},
              {"tokens_seen", r.tokens_seen},
              {"step_s", r.seconds},
              {"comm_s", r.comm_seconds},
              {"reduce_redos", r.reduce_redos},
              {"reduce_recomputes", r.reduce_recomputes},
              {"streamed_units", r.streamed_units},
              {"embed_rows_skipped", r.embed_rows_skipped},
              {"span_s", r.span_seconds},
              {"tokens_per_s", r.tokens_per_s},
              {"step_tokens_per_s", r.step_tokens_per_s},
              {"mfu", r.mfu},
              {"peak_gflops", t.peak_gflops()},
              {"eta_s", r.eta_s},
              {"batch_hash", r.batch_hash},
              {"state_fingerprint", hex64(r.state_fingerprint)},
              {"time", r.time}};  // the end of the span (train/run_clock.h)
  if (!r.instance_indices.empty()) rec["instances"] = r.instance_indices;
  t.metrics().write(rec);
  // The console line: tokens/s and MFU over the wall-clock span since the previous line.
  line_s_ += r.span_seconds;
  line_tokens_ += r.batch_tokens;
  const double tps = double(line_tokens_) / line_s_;
  const double mfu = t.mfu(tps);
  if (t.progress().line_due(r.step)) line_s_ = 0, line_tokens_ = 0;
  char buf[256];
  std::snprintf(buf, sizeof buf, "loss %.4f z %.2e |g| %.3f lr %.3e %s| %.0f tok/s MFU %.1f%% ETA %s",
                r.loss, r.z_loss, r.grad_norm, r.lr, r.skipped ? "SKIPPED " : "", tps, mfu,
                format_duration(r.eta_s).c_str());
  t.progress().step(r.step, buf);
}

void MetricsLogger::on_end(Trainer& t) {
  t.progress().finish();
  t.metrics().write({{"kind", "info"}, {"event", "end"}, {"step", t.step()},
                     {"tokens_seen", t.tokens_seen()}});
}

namespace {
// Number of {"kind":"eval"} records at `step` in the metrics log at `path` (0 when unreadable).
size_t eval_records_at(const std::string& path, int64_t step) {
  std::ifstream in(path);
  size_t n = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"eval\"") == std::string::npos) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.value("kind", "") == "eval" && j.value("step", int64_t(-1)) == step) ++n;
  }
  return n;
}
}  // namespace

void Evaluator::on_start(Trainer& t) {
  const Config& c = t.config();
  data::FslOptions opt;
  opt.eos_id = uint32_t(c.data.eos_id);
  opt.pad_id = uint32_t(c.data.pad_id);
  for (auto& [label, path] : c.eval.sets)
    sets_.push_back(std::make_unique<eval::LmEvaluator>(
        label, path, c.data.seq_len, uint32_t(t.model().config().vocab_size), opt,
        c.eval.max_instances, c.eval.batch_instances));
  if (c.eval.at_start && t.step() == 0) evaluate(t);
  if (t.step() > 0) {
    // Resumed at a checkpoint step. A kill between that checkpoint and the evaluation due at
    // the same step (an interval step, or the final one in on_end) would lose the evaluation:
    // run it now unless the log already holds its records.
    last_step_ = t.step();
    const int64_t s = t.step(), every = c.eval.interval;
    const bool due = s == t.total_steps() || (every > 0 && s % every == 0);
    if (due && t.rank() == 0 && !sets_.empty() && !t.metrics().path().empty() &&
        eval_records_at(t.metrics().path(), s) < sets_.size())
      evaluate(t);
  }
}

std::vector<eval::EvalResult> Evaluator::evaluate(Trainer& t) {
  std::vector<eval::EvalResult> out;
  last_step_ = t.step();
  if (t.rank() != 0) return out;  // every rank holds the same weights: rank 0 evaluates
  for (auto& s : sets_) out.push_back(s->run(t.model()));
  for (Callback* cb : t.callbacks()) cb->mid_eval(t);  // computed, not yet logged
  for (const eval::EvalResult& r : out) {
    t.metrics().write({{"kind", "eval"}, {"step", t.step()}, {"set", r.label},
                       {"loss", num(r.loss)}, {"ppl", num(r.ppl)}, {"tokens", r.tokens},
                       {"instances", r.instances}, {"seconds", r.seconds}});
    char buf[200];
    std::snprintf(buf, sizeof buf, "eval step %lld %-16s loss %.4f ppl %.2f (%lld tokens, %.1fs)",
                  (long long)t.step(), r.label.c_str(), r.loss, r.ppl, (long long)r.tokens,
                  r.seconds);
    t.progress().message(buf);
  }
  last_step_ = t.step();
  return out;
}

void Evaluator::on_step(Trainer& t, const StepResult& r) {
  int64_t every = t.config().eval.interval;
  if (every > 0 && r.step % every == 0 && r.step != t.total_steps()) evaluate(t);
}

void Evaluator::on_end(Trainer& t) {
  if (last_step_ != t.step()) evaluate(t);
}

void Checkpointer::on_start(Trainer& t) { last_saved_ = t.step(); }

// A committed checkpoint: console line and a metrics record with the save's wall time (start
// to commit), the part of it spent on the state fingerprint and the fingerprint's CPU time, and
// the time the training loop was blocked (ckpt_stall_s: the snapshot -- the staging copy, or
// synchronous the whole write -- plus the wait for the writer and the commit).
void Checkpointer::post_checkpoint(Trainer& t, const std::string& dir) {
  const Trainer::SaveTiming& s = t.last_save();
  t.metrics().write({{"kind", "info"}, {"event", "checkpoint"}, {"step", s.step}, {"dir", dir},
                     {"at_step", t.step()}, {"seconds", s.seconds},
                     {"fingerprint_seconds", s.fingerprint_seconds},
                     {"fingerprint_cpu_seconds", s.fingerprint_cpu_seconds},
                     {"async", s.async}, {"ckpt_stall_s", s.stall_s}, {"snapshot_s", s.snapshot_s},
                     {"copy_s", s.copy_s}, {"commit_s", s.commit_s}, {"write_s", s.write_s},
                     {"staged_bytes", s.staged_bytes}});
  t.progress().message("checkpoint " + dir);
}

// Each step boundary first commits the asynchronous checkpoint in flight once every rank's
// writer finished; an interval step then starts the next one (asynchronous unless
// trainer.async_checkpoint is false).
void Checkpointer::on_step(Trainer& t, const StepResult& r) {
  t.poll_checkpoint();
  int64_t every = t.config().trainer.save_interval;
  if (every > 0 && r.step % every == 0) {
    t.save_checkpoint(/*wait=*/!t.config().trainer.async_checkpoint);
    last_saved_ = r.step;
  }
}

// The run's last checkpoint is written synchronously, and one in flight is committed: the
// process never exits before its checkpoints are complete.
void Checkpointer::on_end(Trainer& t) {
  t.finish_checkpoint();
  if (last_saved_ != t.step()) {
    t.save_checkpoint();
    last_saved_ = t.step();
  }
}

void add_default_callbacks(Trainer& t) {
  t.add_callback(std::make_unique<ConfigSaver>());
  t.add_callback(std::make_unique<MetricsLogger>());
  if (!t.config().eval.sets.empty()) t.add_callback(std::make_unique<Evaluator>());
  if (benchmarks_enabled(t.config())) t.add_callback(std::make_unique<BenchmarkCallback>());
  if (!t.config().benchmarks.tasks.empty())
    t.add_callback(std::make_unique<OlmoBenchmarkCallback>());
  install_fault_injection(t);  // data.inject_fault (tests of the audits only)
  if (t.config().audit.enabled) t.add_callback(std::make_unique<DataAudit>());
  if (t.config().validation.interval > 0) t.add_callback(std::make_unique<Validation>());
  if (t.config().trainer.param_rms_interval > 0)
    t.add_callback(std::make_unique<ParamRms>(t.config().trainer.param_rms_interval));
  t.add_callback(std::make_unique<Checkpointer>());
}

}  // namespace olmo::train
