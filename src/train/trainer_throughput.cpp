// The trainer's peak, MFU and wall-clock throughput (see trainer.h, kernels/peak_tracker.h):
//   measure_peak   probes the peaks; each probe can only raise the run's peak (the highest
//                  probe, a checkpoint's included: load on a shared machine only lowers one);
//   mfu            every MFU the run prints or records, against that peak, raised to any
//                  achieved rate above it (logged once): at most 100% by construction;
//   visit_peak     the checkpoint's "peak" section, so a resumed run keeps the highest peak;
//   write_summary  this segment's wall-clock tokens/s (evaluation, checkpoints and reduction
//                  redos included: from fit()'s start to its end) and the training-only figure
//                  (the steps' own time).
// Test hook: OLMO_TEST_PEAK=GFLOPS is what the first probe of each precision reports (a probe
// run while the machine was busy); later probes measure.
#include <omp.h>

#include <cstdio>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/cpu.h"
#include "core/error.h"
#include "core/format.h"
#include "core/runtime.h"
#include "core/state_visitor.h"
#include "kernels/peak.h"
#include "model/olmo3.h"
#include "train/metrics_log.h"
#include "train/progress.h"
#include "train/trainer.h"

namespace olmo::train {

namespace {

// OLMO_TEST_PEAK as GFLOP/s; nullopt when unset.
std::optional<double> test_peak() {
  const std::optional<std::string> env = runtime().env("OLMO_TEST_PEAK");
  if (!env || env->empty()) return std::nullopt;
  char* end = nullptr;
  const double g = std::strtod(env->c_str(), &end);
  OLMO_CHECK(end != env->c_str() && *end == '\0' && g > 0, "OLMO_TEST_PEAK = '", *env,
             "' is not a positive GFLOP/s figure");
  return g;
}

}  // namespace

const kernels::PeakTracker& Trainer::mfu_peak() const {
  return model_->precision() == model::Precision::bf16_mixed ? peak_bf16_ : peak_fp32_;
}
kernels::PeakTracker& Trainer::mfu_peak() {
  return model_->precision() == model::Precision::bf16_mixed ? peak_bf16_ : peak_fp32_;
}

void Trainer::measure_peak() {
  if (cfg_.trainer.peak_interval < 0) return;
  // Both peaks at the start (the log header shows both); later only the one MFU uses: the fp32
  // FMA peak, or the bf16 dot-product peak when the matmuls run in bf16 (bf16_mixed).
  const bool bf16 = model_->precision() == model::Precision::bf16_mixed;
  const bool first = !probed_;
  probed_ = true;
  const std::optional<double> forced = first ? test_peak() : std::nullopt;
  if (first) fma_theory_ = kernels::theoretical_fp32_peak();
  if (first || !bf16) peak_fp32_.probe(forced ? *forced : kernels::measure_fp32_peak_gflops(0.3));
  if (first || bf16) {
    const double b = kernels::measure_bf16_peak_gflops(first && !bf16 ? 0.1 : 0.3, 0);
    peak_bf16_.probe(forced && b > 0 ? *forced : b);
  }
}

double Trainer::mfu(double tokens_per_s) {
  // Per process: the world's rate over W processes, each against its own peak.
  return mfu_peak().mfu(flops_per_token_ * tokens_per_s / double(world_) * 1e-9);
}

void Trainer::note_peak_raise(double at) {
  const kernels::PeakTracker& p = mfu_peak();
  if (raise_noted_ || p.raises() == 0 || !metrics_) return;
  raise_noted_ = true;
  const kernels::PeakTracker::Raise& r = p.first_raise();
  const char* prec = &p == &peak_bf16_ ? "bf16" : "fp32";
  metrics_->write({{"kind", "info"}, {"event", "peak_raised"}, {"step", step_},
                   {"precision", prec}, {"from_gflops", r.from}, {"to_gflops", r.to},
                   {"time", clock_.unix_time(at >= 0 ? at : clock_.seconds())}});
  char buf[300];
  std::snprintf(buf, sizeof buf,
                "step %lld: peak raised to the achieved %.1f GFLOP/s per process (the highest %s "
                "probe, %.1f GFLOP/s, ran while the machine was busy); MFU is quoted against the "
                "raised peak from here on (said once)",
                (long long)step_, r.to, prec, r.from);
  progress_->message(buf);
}

// Section "peak": the run's highest peaks per process, with the threads and ISA they hold for.
// A resume with the same threads and ISA starts from them (a probe can only raise them); never
// fingerprinted (a measurement, not part of the trajectory). Rank 0's are saved.
void Trainer::visit_peak(StateVisitor& v) {
  if (v.loading() && !v.has_section("peak")) return;  // a checkpoint of an older build
  StateVisitor::Section s(v, "peak");
  double fp32 = peak_fp32_.peak(), bf16 = peak_bf16_.peak();
  int64_t threads = omp_get_max_threads();
  std::string isa = isa_name(active_isa());
  v.field("fp32_gflops", fp32);
  v.field("bf16_gflops", bf16);
  v.field("threads", threads);
  v.field("isa", isa);
  if (!v.loading() || cfg_.trainer.peak_interval < 0) return;
  if (threads == omp_get_max_threads() && isa == isa_name(active_isa())) {
    peak_fp32_.probe(fp32);
    peak_bf16_.probe(bf16);
  } else if (rank_ == 0) {
    warnings_.push_back(cat("the checkpoint's peak (", threads, " threads, ", isa,
                            ") is not used: this run has ", omp_get_max_threads(), " threads, ",
                            isa_name(active_isa())));
  }
}

void Trainer::write_summary() {
  if (segment_steps_ == 0 || !metrics_) return;
  const double wall_s = clock_.seconds();
  const double tokens = double(segment_tokens_);
  const double wall_tps = tokens / wall_s, train_tps = tokens / segment_train_s_;
  const double wall_mfu = mfu(wall_tps), train_mfu = mfu(train_tps);
  note_peak_raise(wall_s);  // (a raise by these figures: said with the summary's time)
  const kernels::PeakTracker& p = mfu_peak();
  const int64_t first = step_ - segment_steps_ + 1;
  metrics_->write({{"kind", "info"}, {"event", "summary"}, {"step", step_},
                   {"first_step", first}, {"steps", segment_steps_}, {"tokens", segment_tokens_},
                   {"wall_s", wall_s}, {"wall_tokens_per_s", wall_tps}, {"wall_mfu", wall_mfu},
                   {"train_s", segment_train_s_}, {"train_tokens_per_s", train_tps},
                   {"train_mfu", train_mfu}, {"peak_gflops", p.peak()},
                   {"peak_highest_probe_gflops", p.highest_probe()},
                   {"peak_raised", p.raises() > 0}, {"time", clock_.unix_time(wall_s)}});
  char buf[600];
  std::snprintf(buf, sizeof buf,
                "summary: steps %lld-%lld, %s tokens: wall clock %.1f s = %.0f tokens/s, MFU "
                "%.1f%% (evaluation, checkpoints and redos included); training steps alone "
                "%.1f s = %.0f tokens/s, MFU %.1f%%; peak %.1f GFLOP/s per process%s",
                (long long)first, (long long)step_, commas(segment_tokens_).c_str(), wall_s,
                wall_tps, wall_mfu, segment_train_s_, train_tps, train_mfu, p.peak(),
                p.raises() > 0 ? " (raised to the achieved rate)" : "");
  progress_->message(buf);
}

}  // namespace olmo::train
