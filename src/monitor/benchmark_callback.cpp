// In-loop benchmark suites and canary exposure (see benchmark_callback.h).
#include "monitor/benchmark_callback.h"

#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "model/olmo3.h"
#include "train/metrics_log.h"
#include "train/progress.h"

using nlohmann::json;

namespace olmo::train {

static json num(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }

int64_t BenchmarkCallback::interval(const Config& c) {
  return c.benchmarks.interval > 0 ? c.benchmarks.interval : c.validation.interval;
}

void BenchmarkCallback::on_start(Trainer& t) {
  if (t.rank() != 0) return;
  const BenchmarksSection& b = t.config().benchmarks;
  const std::string tok_path =
      b.tokenizer.empty() ? tokenizer::Tokenizer::default_path() : b.tokenizer;
  tokenizer::Tokenizer tok = tokenizer::Tokenizer::load(tok_path);
  for (auto& [label, path] : b.suites)
    suites_.push_back(std::make_unique<eval::BenchmarkSuite>(label, path, tok, b.max_items));
  if (!b.canaries.empty())
    exposure_ = std::make_unique<eval::ExposureEvaluator>(b.canaries, tok, b.exposure_candidates,
                                                          b.canaries_per_count);
  if (t.step() > 0) last_step_ = t.step();  // resumed: that step was scored (or not) before
  if (b.at_start && t.step() == 0) evaluate(t);
}

void BenchmarkCallback::evaluate(Trainer& t) {
  last_step_ = t.step();
  if (t.rank() != 0) return;
  char buf[256];
  for (auto& s : suites_) {
    eval::SuiteResult r = s->run(t.model());
    t.metrics().write({{"kind", "benchmark"}, {"step", t.step()}, {"suite", r.name},
                       {"items", r.items}, {"acc", num(r.acc)},
                       {"acc_len_norm", num(r.acc_len_norm)}, {"bpb", num(r.bpb)},
                       {"ce_loss", num(r.ce_loss)}, {"truncated", r.truncated},
                       {"forwards", r.forwards}, {"tokens", r.tokens}, {"seconds", r.seconds}});
    std::snprintf(buf, sizeof buf,
                  "bench step %lld %-14s acc %.3f acc_len_norm %.3f bpb %.3f (%lld items, %.1fs)",
                  (long long)t.step(), r.name.c_str(), r.acc, r.acc_len_norm, r.bpb,
                  (long long)r.items, r.seconds);
    t.progress().message(buf);
  }
  if (exposure_) {
    eval::ExposureResult r = exposure_->run(t.model());
    json by = json::object(), per = json::object();
    std::string line = cat("exposure step ", t.step(), " (bits, |R| = ", r.candidates, "):");
    for (auto& [count, c] : r.by_count) {
      by[std::to_string(count)] = {{"mean", num(c.mean)}, {"min", num(c.min)},
                                   {"max", num(c.max)}, {"canaries", c.canaries}};
      std::snprintf(buf, sizeof buf, " x%d %.2f", count, c.mean);
      line += buf;
    }
    for (auto& e : r.canaries) per[e.name] = num(e.exposure);
    t.metrics().write({{"kind", "exposure"}, {"step", t.step()}, {"candidates", r.candidates},
                       {"by_count", by}, {"canaries", per}, {"forwards", r.forwards},
                       {"seconds", r.seconds}});
    std::snprintf(buf, sizeof buf, " (%.1fs)", r.seconds);
    t.progress().message(line + buf);
  }
}

void BenchmarkCallback::on_step(Trainer& t, const StepResult& r) {
  const int64_t every = interval(t.config());
  if (every > 0 && r.step % every == 0 && r.step != t.total_steps()) evaluate(t);
}

void BenchmarkCallback::on_end(Trainer& t) {
  if (last_step_ != t.step()) evaluate(t);
}

}  // namespace olmo::train
