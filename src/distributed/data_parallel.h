// Data parallelism applied from outside the train step: one object owns what makes W ranks act
// as one model -- the micro-batch gradient accumulation, the reduction (dist.reduce exact or
// fast, GradReducer), ZeRO sharding (ZeRO-1/2: optimizer state and reduced gradient per shard;
// ZeRO-3: the parameters too, Zero3Params), the global counts, loss sums and gradient norm, and
// its own part of the checkpoint (the exact reduction's scales). The train step (train/
// train_module.h) drives it through the narrow protocol below and contains no reduce-mode or
// ZeRO-stage branch.
//
// One step, every rank alike:
//   counts = count(targets)                      global target tokens and instances
//   do {                                         (a redo repeats the passes: exact overflow)
//     begin_pass(counts)
//     per micro-batch i (exact: per instance, per_instance(); plus padding rounds where
//     equal_rounds()): before_micro_batch(i, last); model.forward_backward(...)
//                        (calling unit_grad_done(a, b) per parameter unit);
//                        after_micro_batch(tokens, n, sums)
//     red = reduce(counts)                       this rank's shard of the summed gradient,
//   } while (red.redo)                           the global loss sums, the non-finite flags
//   norm = grad_norm(red.grad, red.n)            the global L2 norm (same value on every rank)
//   AdamW on (param_shard(), red.grad)
//   end_step(applied)                            every rank gets the updated parameters
// What each reduction does, its cost and its invariance: zero.h, scaled_fixed.h.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/state_visitor.h"

#include "distributed/communicator.h"
#include "distributed/fixed_point.h"
#include "distributed/reduce_settings.h"
#include "distributed/zero.h"
#include "kernels/loss.h"

namespace olmo::model {
class Olmo3;
}

namespace olmo::dist {

class Zero3Params;

struct DataParallelOptions {
  ReduceMode reduce = ReduceMode::exact;
  bool exact_local = true;       // exact: local (true) or sharded accumulator
  size_t bucket_elems = 0;       // reduce-scatter bucket, fp32 elements
  int zero_stage = 2;            // 2: full parameters on every rank; 3: sharded (exact only)
  bool per_rank_loss = false;    // loss normalisation per rank (OLMo-core) instead of global
  bool overlap = true;           // stream the last micro-batch's gradient during its backward
};

class DataParallel {
 public:
  DataParallel(Communicator& comm, model::Olmo3& model, const DataParallelOptions& o);
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  struct Counts {
    int64_t total = 0;             // target tokens (!= -100) of the global batch
    int64_t local = 0;             // of this rank's
    int64_t global_instances = 0;  // instances of the global batch
    int64_t max_rank_instances = 0;  // the most instances any rank holds (uneven ranks)
  };
  // Collective. Throws when the global batch has no target (or, per-rank normalisation, a rank
  // has none).
  Counts count(const int32_t* targets, int64_t B, int64_t T, int64_t step);
  // The gradient scale of this step: 1 / total (global) or 1 / (W * local) (per rank).
  float grad_scale(const Counts& c) const;
  // exact: the unit of exactness is the instance: each forward/backward takes one instance, so
  // its gradient is an fp32 sum over that instance's tokens, converted to fixed point once
  // (a step's bits are those of its global batch, for any ranks and micro-batch size).
  bool per_instance() const { return o_.reduce == ReduceMode::exact; }
  // Whether every rank must run the same number of forward/backward rounds per pass (the
  // sharded accumulator's per-micro-batch reduce-scatter, ZeRO-3's gathers are collective): a
  // rank with fewer instances then runs padding rounds (a backward with gradient scale 0,
  // whose loss sums are dropped: it adds integer zeros).
  bool equal_rounds() const;

  void begin_pass(const Counts& c);
  // last: this rank's last micro-batch of the pass (its gradient is reduced while its backward
  // runs, when the options and the reduction allow: GradReducer::can_stream).
  void before_micro_batch(int64_t i, bool last);
  // The backward has finished the gradient of the flat range [a, b) (a parameter unit, in the
  // model's order: Olmo3::set_grad_done_hook) for the current micro-batch.
  void unit_grad_done(size_t a, size_t b);
  // tokens[n]: the micro-batch's input ids (the embedding rows its gradient touches).
  void after_micro_batch(const int32_t* tokens, int64_t n, const kernels::LossSums& s);

  struct Reduced {
    float* grad = nullptr;  // this rank's shard of the summed gradient [n]
    size_t n = 0;
    bool grad_nonfinite = false;
    bool redo = false;      // exact: a gradient outgrew its scale; run the passes again
    double loss = 0, z_sum = 0;  // ce and z sums over the global batch, normalised (mean)
  };
  // Collective.
  Reduced reduce(const Counts& c);
  // Collective: the L2 norm of the global gradient from every rank's shard.
  double grad_norm(const float* g, size_t n);
  // Collective: true on every rank when any rank's shard holds a NaN/Inf (for runs without
  // clipping, where no norm catches it).
  bool any_nonfinite(const float* g, size_t n);
  // exact: false until a step has measured the scales (a new run's first pass measures them).
  bool scales_known() const;
  // The parameters this rank's optimizer updates (its shard of the flat vector).
  float* param_shard();
  // Collective: after the optimizer; applied false = the step was skipped (nothing changed).
  void end_step(bool applied);

  // ZeRO-3: hands the model the parameter provider (build the model without own storage).
  void shard_parameters();
  // ZeRO-3 after shard_parameters(): the shard; null otherwise.
  float* sharded_params();
  const float* sharded_params() const;

  size_t shard_begin() const { return reducer_->shard_begin(); }
  size_t shard_len() const { return reducer_->shard_len(); }
  size_t grad_shard_bytes() const { return shard_grad_.size() * sizeof(float); }
  const GradReducer& reducer() const { return *reducer_; }
  // Seconds inside communication calls since construction (the reducer's and the counts').
  double comm_seconds() const;
  int64_t redos() const { return redos_; }

  // Its part of the checkpoint: {"scale_exponents": [...]} (the exact reduction's scales).
  nlohmann::json state_json() const;
  // A section from another model or mode leaves the scales unknown (the next step measures
  // them). `where` names the file for errors.
  void load_state_json(const nlohmann::json& j, const std::string& where);
  // Checkpoint section "reduce" (core/state_visitor.h); a checkpoint without it (an older one)
  // leaves the scales unknown.
  void visit_state(StateVisitor& v) {
    if (v.loading() && !v.has_section("reduce")) return;
    visit_json_state(v, "reduce", {}, [this] { return state_json(); },
                     [this](const nlohmann::json& j) { load_state_json(j, "checkpoint section reduce"); });
  }

 private:
  Communicator& comm_;
  model::Olmo3& model_;
  DataParallelOptions o_;
  std::unique_ptr<GradReducer> reducer_;
  std::unique_ptr<Zero3Params> zero3_;
  bool sharded_ = false;            // shard_parameters() done
  std::vector<float> shard_grad_;   // the reduced gradient of this rank's shard
  i128 ce_fx_ = 0, z_fx_ = 0;       // exact: loss sums in fixed point
  double sums_[2] = {0, 0};         // fast: loss sums
  bool loss_bad_ = false;
  bool streaming_ = false;          // this micro-batch's units are reduced as they finish
  bool last_ = false;               // this micro-batch is the rank's last of the step
  bool grad_cleared_ = false;       // exact: the last conversion zeroed the model's gradient
  double comm_s_ = 0;
  int64_t redos_ = 0;
};

}  // namespace olmo::dist
