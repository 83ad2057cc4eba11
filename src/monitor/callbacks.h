// The standard callbacks of a run (OLMo-core's ConfigSaver, console/metrics logging,
// LM evaluator, checkpointer). Each one touches the trainer only through its public API, so
// audits or distributed hooks plug in the same way without editing the loop.
//   ConfigSaver      RUN_DIR/config.yaml = the resolved config (on start)
//   MetricsLogger    one JSONL record per step (kind "train"): step, loss, z_loss, grad_norm, lr,
//                    tokens/s, MFU, ETA, ...; the progress bar / log line on the console
//   Evaluator        held-out loss + PPL per set (kind "eval") before step 1 (eval.at_start),
//                    every eval.interval steps and at the end
//   Checkpointer     complete checkpoint every trainer.save_interval steps and at the end
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "eval/lm_evaluator.h"
#include "train/trainer.h"

namespace olmo::train {

class ConfigSaver : public Callback {
 public:
  std::string name() const override { return "config_saver"; }
  void on_start(Trainer& t) override;
};

class MetricsLogger : public Callback {
 public:
  std::string name() const override { return "metrics_logger"; }
  void on_start(Trainer& t) override;
  void on_step(Trainer& t, const StepResult& r) override;
  void on_end(Trainer& t) override;

 private:
  // The span of the console line being accumulated: the steps' wall-clock spans since the
  // previous line (Progress::line_due), so a line's tokens/s and MFU are what a stopwatch says.
  double line_s_ = 0;
  int64_t line_tokens_ = 0;
};

class Evaluator : public Callback {
 public:
  std::string name() const override { return "lm_evaluator"; }
  void on_start(Trainer& t) override;
  void on_step(Trainer& t, const StepResult& r) override;
  void on_end(Trainer& t) override;
  // Runs every held-out set now, logs and returns the results.
  std::vector<eval::EvalResult> evaluate(Trainer& t);

 private:
  std::vector<std::unique_ptr<eval::LmEvaluator>> sets_;
  int64_t last_step_ = -1;
};

class Checkpointer : public Callback {
 public:
  std::string name() const override { return "checkpointer"; }
  void on_start(Trainer& t) override;
  void on_step(Trainer& t, const StepResult& r) override;
  void on_end(Trainer& t) override;
  // Every committed checkpoint (this callback's, a preemption's, a deferred one): console line
  // and metrics record with its timing (Trainer::SaveTiming).
  void post_checkpoint(Trainer& t, const std::string& dir) override;

 private:
  int64_t last_saved_ = -1;
};

// ConfigSaver, MetricsLogger, Evaluator (if eval.sets is not empty), Checkpointer.
void add_default_callbacks(Trainer& t);

}  // namespace olmo::train
