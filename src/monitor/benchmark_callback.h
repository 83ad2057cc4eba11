// In-loop benchmark suites and canary exposure (config section `benchmarks:`), in the manner of
// OLMo-core's DownstreamEvaluator callback: before step 1 (benchmarks.at_start), every
// benchmarks.interval steps (0: validation.interval) and at the end, on rank 0 only (the weights
// are the same on every rank; the other ranks go on to the next step's collectives and wait):
//   metrics.jsonl  {"kind": "benchmark", "step", "suite", "items", "acc", "acc_len_norm", "bpb",
//                   "ce_loss", "truncated", "forwards", "seconds"}       one per suite
//                  {"kind": "exposure", "step", "candidates", "by_count": {"0": {"mean", "min",
//                   "max", "canaries"}, "1": ...}, "canaries": {name: exposure}, "seconds"}
//   console        one line per suite, one line with the mean exposure per repetition count.
// Suites and canaries are read and tokenized once at start. After a resume the step that was
// resumed from is not scored again.
// Cost per pass: sum over suites of items x choices forwards, plus canaries x candidates forwards
// (batch 1, ~10-100 tokens each; the LM head only on the scored positions).
#pragma once
#include <memory>
#include <vector>

#include "eval/benchmark.h"
#include "eval/exposure.h"
#include "train/trainer.h"

namespace olmo::train {

class BenchmarkCallback : public Callback {
 public:
  std::string name() const override { return "benchmarks"; }
  void on_start(Trainer& t) override;
  void on_step(Trainer& t, const StepResult& r) override;
  void on_end(Trainer& t) override;
  // Scores every suite and the canaries now (rank 0), logs the records.
  void evaluate(Trainer& t);
  // The step interval in effect (benchmarks.interval, else validation.interval).
  static int64_t interval(const Config& c);

 private:
  std::vector<std::unique_ptr<eval::BenchmarkSuite>> suites_;
  std::unique_ptr<eval::ExposureEvaluator> exposure_;
  int64_t last_step_ = -1;
};

}  // namespace olmo::train
