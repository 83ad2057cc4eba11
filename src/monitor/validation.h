// Validation checkpoints (config section `validation:`): every validation.interval steps and at
// the last step, on rank 0, one compact record in RUN_DIR/validation.jsonl (and the same as
// {"kind":"validation"} in metrics.jsonl):
//   step, window_steps     the steps since the previous record (the "window")
//   heldout {set: loss}    held-out CE per set (validation.sets, default eval.sets; at most
//                          validation.max_instances documents each)
//   model_entropy          mean predictive entropy (nats) of the model over every position of a
//                          fixed validation batch (the first entropy_instances documents of the
//                          first set)
//   marginal_entropy_bits  entropy of the model's mean predicted token distribution on that batch
//   batch_entropy_bits     unigram entropy of the fixed batch's own tokens (constant; reference)
//   served_entropy_bits    unigram entropy of the tokens served in the window
//   train_loss             mean train loss over the window
//   gap {set: train - held-out}
//   exposure {count: mean} canary exposure (bits) by repetition count, taken from the
//                          {"kind":"exposure"} record the benchmarks callback (
//                          monitor/benchmark_callback.h, eval/exposure.h) logged at the same step
//                          (benchmarks.canaries set, benchmarks.interval a divisor of
//                          validation.interval); absent otherwise. Not recomputed here.
// With validation.reference = RUN_DIR (same model and data config, checked at start: a
// mismatch or a reference without records is an error) every record is compared with the
// reference's record at the same step: held-out loss (tol_loss), gap (tol_gap), served and model
// entropy (tol_entropy); a divergence raises an alarm (monitor/audit_callback.h raise_alarm) and,
// with stop_on_alarm, stops the run. max_gap > 0 alarms when held-out - train loss exceeds it.
// A reference run of OLMo-core (scripts/olmo_core_run.py, monitor/reference_run.h) is compared
// with its noise-floor bounds instead of the tol_* fields: held-out loss, gap, model and
// marginal entropy within reference_floor_multiple x the floor, served entropy exactly.
// Resume: records after the resumed step are dropped; the first window after a resume starts
// at the resumed step (window_steps says how long it was).
// Cost per record: one held-out evaluation per set, entropy_instances forwards with full logits
// (T x V floats each), a read of the last 256 KiB of metrics.jsonl.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "audit/token_stats.h"
#include "eval/lm_evaluator.h"
#include "monitor/reference_run.h"
#include "train/trainer.h"

namespace olmo::train {

class Validation : public Callback {
 public:
  std::string name() const override { return "validation"; }
  void on_start(Trainer& t) override;
  void on_step(Trainer& t, const StepResult& r) override;
  void on_end(Trainer& t) override;
  // Computes, writes and compares one record now; returns it.
  nlohmann::json record(Trainer& t);

 private:
  void compare(Trainer& t, const nlohmann::json& rec);
  void compare_to_reference_run(Trainer& t, const nlohmann::json& rec, const nlohmann::json& ref);
  bool active_ = false;
  std::vector<std::unique_ptr<eval::LmEvaluator>> sets_;
  std::vector<std::vector<int32_t>> fixed_;  // the fixed validation batch (unpadded documents)
  double batch_entropy_ = 0;
  audit::TokenHistogram served_;
  double loss_sum_ = 0;
  int64_t window_ = 0, last_step_ = -1;
  std::map<int64_t, nlohmann::json> reference_;
  std::unique_ptr<ReferenceRun> ref_run_;  // set when the reference is an OLMo-core run
  std::string path_;
};

// Checks that a reference run has the same model and data config as c and reads its records
// (step -> record). Throws naming the run dir and the first differing key.
std::map<int64_t, nlohmann::json> load_reference(const Config& c, const std::string& run_dir);
// Reads RUN_DIR/validation.jsonl (step -> record, last one wins). Throws if missing.
std::map<int64_t, nlohmann::json> read_validation_records(const std::string& run_dir);
// The config keys that must agree between a run and its reference (model.*, data.* except the
// fault switches), as key -> printed value.
std::map<std::string, std::string> comparable_config(const Config& c);

}  // namespace olmo::train
