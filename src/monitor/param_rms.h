// Per-group weight RMS and update RMS of the parameters (issue 37 item 6): a deviation of the
// optimizer recipe that the loss does not show yet (weight decay on the wrong set, a wrong lr
// multiplier on one group, a frozen or double-stepped tensor) moves the weights of its group.
// Every trainer.param_rms_interval steps (0 = off) rank 0 writes one metrics record
//   {"kind":"param_rms","step":s,"weight":{group: rms},"update":{group: rms}}
// weight = sqrt(sum w_t^2 / n), update = sqrt(sum (w_t - w_{t-1})^2 / n) over the group's n
// elements, sums in float64, w_{t-1} the weights before step s's optimizer step (a skipped step
// has update 0). Groups pool one kind of tensor over all layers (14 names, ~0.6 KB a record):
//   embed, attn_q, attn_k, attn_v, attn_o, q_norm, k_norm, mlp_gate, mlp_up, mlp_down,
//   attn_norm, mlp_norm, final_norm, lm_head
// and, beside them, every block tensor alone as GROUP.LAYER (attn_q.0, ..., mlp_norm.L-1: 11 x
// n_layers more entries), so a deviation in one layer's tensor is named.
// scripts/ref_metrics.py records the same names on OLMo-core's model; `olmo compare RUN REF`
// bounds each by the twins' noise floor (reference_run.h).
// Cost per recorded step: a copy of the weights before the step (one extra fp32 copy of the
// parameters held from pre_step to post_step) and two passes over them. Not recorded under
// ZeRO-3 (no rank holds the full weights; a notice says so).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/param_groups.h"
#include "train/callback.h"

namespace olmo::train {

class ParamRms : public Callback {
 public:
  explicit ParamRms(int64_t interval) : interval_(interval) {}
  std::string name() const override { return "param_rms"; }
  void on_start(Trainer& t) override;
  void pre_step(Trainer& t, data::DataLoader::Batch&) override;
  void post_step(Trainer& t, const StepResult& r) override;

 private:
  bool due(int64_t step) const { return enabled_ && interval_ > 0 && step % interval_ == 0; }
  int64_t interval_;
  bool enabled_ = false;
  std::vector<float> before_;  // the weights before the step being recorded
  bool have_before_ = false;
};

}  // namespace olmo::train
