// OLMo-core's skip-step rule (olmo_core/optim/skip_step_optimizer.py::SkipStepOptimizer).
// Each step the trainer records the step's CE loss (sum of token CE / step's target tokens, no
// z-loss) and the pre-clip total grad norm; the window keeps the last rolling_interval_length+1
// values (129 for 128) INCLUDING the current one. Once >= max(2, rolling_interval_length/2) values
// are held (64, current included), the step proceeds iff
//   (loss - mean) <= sigma*std  AND  (grad_norm - mean) <= sigma*std
// with mean/std = torch.std_mean (unbiased, Welford in double, rounded to fp32) over the window
// minus the current value, all comparisons in fp32. A NaN anywhere fails the test => skip.
// Skipped steps' values stay in the window (as in OLMo-core).
// Non-finite values: in OLMo-core a NaN/Inf loss is recorded like any other and, before the
// window holds rolling_interval_length/2 values, the step is APPLIED (step factor 1), so a NaN
// gradient reaches the weights; once in the window, the NaN makes mean/std NaN and every later
// step is skipped until it rolls out (129 steps). olmo.cpp's trainer therefore never calls
// record() for a non-finite step: it skips it unconditionally (src/train/trainer.h, "Numeric
// faults"), and this class only ever sees finite values there -- for finite values the rule,
// and the bits, are OLMo-core's.
#pragma once
#include <deque>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/state_visitor.h"

namespace olmo::optim {

class SkipStep {
 public:
  explicit SkipStep(int rolling_interval_length = 128, double sigma_factor = 6.0);

  // Append this step's values (grad_norm absent when clipping is off: loss-only rule) and
  // return true iff the optimizer should apply the step (step factor 1).
  bool record(float loss, std::optional<float> grad_norm);

  // Decision for the values recorded last (what record() returned); true before any record.
  bool step_factor() const;

  const std::deque<float>& losses() const { return losses_; }
  const std::deque<float>& grad_norms() const { return grad_norms_; }
  int rolling_interval_length() const { return len_; }

  // {"rolling_interval_length", "sigma_factor", "losses":[...], "grad_norms":[...]}; floats are
  // stored exactly (JSON doubles hold every fp32). load_state throws olmo::Error on a bad field.
  nlohmann::json state_json() const;
  void load_state_json(const nlohmann::json& j);
  // Checkpoint section "skip_step" (core/state_visitor.h); fingerprint group "skip_step": the
  // window length and both windows.
  void visit_state(StateVisitor& v) {
    visit_json_state(v, "skip_step", {"skip_step", {"rolling_interval_length", "losses", "grad_norms"}},
                     [this] { return state_json(); },
                     [this](const nlohmann::json& j) { load_state_json(j); });
  }

 private:
  int len_;
  float sigma_;
  std::deque<float> losses_, grad_norms_;
};

// torch.std_mean (correction 1) of fp32 values: Welford in double, results rounded to fp32.
void std_mean_f32(const float* x, size_t n, float& std_out, float& mean_out);

}  // namespace olmo::optim
