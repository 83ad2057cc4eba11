// Data parallelism applied from outside the train step: one object owns what makes W ranks act
// as one model -- the micro-batch gradient accumulation, the reduction (dist.reduce exact or
// fast, GradReducer), ZeRO sharding (ZeRO-1/2: optimizer state and reduced gradient per shard;
// ZeRO-3: the parameters too, Zero3Params), the global counts, loss sums and gradient norm, the
// exact reduction's rescales, and its own part of the checkpoint (the exact reduction's
// scales). The train step (train/train_module.h) hands it the forward/backward of one
// micro-batch and gets the reduced gradient back; it contains no reduce-mode, rescale or
// ZeRO-stage branch.
//
// One step, every rank alike:
//   counts = count(targets)                      global target tokens and instances
//   red = gradient(counts, ..., forward_backward)
//     runs forward_backward over this rank's micro-batches (exact: one instance each, the unit
//     of exactness; plus padding rounds where equal_rounds()), accumulates and reduces them:
//     red.grad = this rank's shard of the summed gradient, red.loss / z_sum the global sums.
//     A rescale (the exact reduction's scales outgrown, decided alike on every rank) converts
//     the step's gradients again with the raised scales: from the fp32 gradients it kept
//     (keep_grads below), else by running the micro-batches again.
//   norm = grad_norm(red.grad, red.n)            the global L2 norm (same value on every rank)
//   AdamW on (param_shard(), red.grad)
//   end_step(applied)                            every rank gets the updated parameters
// Kept gradients (exact, ZeRO-2): from the step after a segment's first rescale (for a new run:
// step 1's scale measurement) every micro-batch's fp32 gradient is copied as its backward ends
// (rounds x 4 B per parameter per rank, e.g. 8 x 111 MB for the demo at 1 process; one extra
// read and write of the gradient per micro-batch) when that fits keep_limit_bytes; a later
// rescale then replays the copies through the same conversion (the same integers as running
// the micro-batches again, so the same bits) instead of a forward and backward. So a run
// segment recomputes at most once. ZeRO-3 (no full gradient buffer) always recomputes.
// While the copies are kept (local accumulator), every micro-batch but the rank's last is
// converted from its copy together with the last (GradReducer::defer_micro_batch: one pass
// over the accumulator per step instead of a read-modify-write per micro-batch, the same
// bits); its copy clears the model's gradient as it reads it.
// What each reduction does, its cost and its invariance: zero.h, scaled_fixed.h.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <utility>
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
  int64_t micro_instances = 1;   // instances per micro-batch (fast; exact: one, per_instance())
  // exact: the most bytes this rank may hold for kept micro-batch gradients (rounds x 4 B per
  // parameter); beyond it a rescale runs the micro-batches again. The same bits either way.
  size_t keep_limit_bytes = std::numeric_limits<size_t>::max();
};

// One forward/backward as gradient() asks for it: instances [first, first + n) of this rank's
// batch, the gradient scaled by grad_scale (0 for a padding round, which repeats instance 0).
struct MicroBatch {
  int64_t index = 0;      // in this rank's step
  int64_t first = 0, n = 0;
  float grad_scale = 0;
  // A micro-batch of this rank's batch run for the first time in the step (false for padding
  // rounds and for a run again after a rescale): the caller's per-micro-batch hooks fire.
  bool report = false;
};
// Runs the forward/backward of one micro-batch into the model's gradient buffer and returns
// its loss sums.
using ForwardBackward = std::function<kernels::LossSums(const MicroBatch&)>;
// Observer: the backward of micro-batch `micro` has finished the gradient of the flat range
// [a, b) (one parameter unit); only for reported micro-batches.
using UnitDone = std::function<void(int64_t micro, size_t a, size_t b)>;

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
  struct Reduced {
    float* grad = nullptr;  // this rank's shard of the summed gradient [n]
    size_t n = 0;
    bool grad_nonfinite = false;
    double loss = 0, z_sum = 0;  // ce and z sums over the global batch, normalised (mean)
    int64_t rescales = 0;    // exact: rescale events this step (a new run's first step: 1)
    int64_t recomputes = 0;  // of them, those that ran the micro-batches again
  };
  // Collective. The step's reduced gradient: forward_backward over this rank's micro-batches of
  // B instances x T tokens (tokens: their input ids, for the embedding rows they touch),
  // accumulated and reduced, rescales included. unit_done (may be empty) observes the backward.
  Reduced gradient(const Counts& c, const int32_t* tokens, int64_t B, int64_t T, int64_t step,
                   const ForwardBackward& forward_backward, const UnitDone& unit_done);
  // Collective: the L2 norm of the global gradient from every rank's shard.
  double grad_norm(const float* g, size_t n);
  // Collective: true on every rank when any rank's shard holds a NaN/Inf (for runs without
  // clipping, where no norm catches it).
  bool any_nonfinite(const float* g, size_t n);
  // exact: micro-batch gradients kept for a rescale's replay (0 until a rescale arms them).
  size_t kept_bytes() const;
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
  int64_t redos() const { return redos_; }  // rescale events since construction

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
  // exact: the unit of exactness is the instance: each forward/backward takes one instance, so
  // its gradient is an fp32 sum over that instance's tokens, converted to fixed point once
  // (a step's bits are those of its global batch, for any ranks and micro-batch size).
  bool per_instance() const { return o_.reduce == ReduceMode::exact; }
  // Whether every rank must run the same number of forward/backward rounds per pass (the
  // sharded accumulator's per-micro-batch reduce-scatter, ZeRO-3's gathers are collective): a
  // rank with fewer instances then runs padding rounds (a backward with gradient scale 0,
  // whose loss sums are dropped: it adds integer zeros).
  bool equal_rounds() const;
  // The gradient scale of this step: 1 / total (global) or 1 / (W * local) (per rank).
  float grad_scale(const Counts& c) const;
  // exact: false until a step has measured the scales (a new run's first pass measures them).
  bool scales_known() const;

  // One pass over the step's micro-batches (gradient() runs a second after a rescale):
  //   begin_pass; per micro-batch i: before_micro_batch(i, last); the forward/backward (calling
  //   unit_grad_done(a, b) per parameter unit); after_micro_batch(tokens, n, sums); reduce.
  void begin_pass(const Counts& c);
  // last: this rank's last micro-batch of the pass (its gradient is reduced while its backward
  // runs, when the options and the reduction allow: GradReducer::can_stream).
  void before_micro_batch(int64_t i, bool last);
  // The backward has finished the gradient of the flat range [a, b) (a parameter unit, in the
  // model's order: Olmo3::set_grad_done_hook) for the current micro-batch.
  void unit_grad_done(size_t a, size_t b);
  // tokens[n]: the micro-batch's input ids (the embedding rows its gradient touches). kept
  // (exact, local accumulator): the micro-batch's kept copy, converted later from it
  // (GradReducer::defer_micro_batch) instead of from the model's gradient now.
  void after_micro_batch(const int32_t* tokens, int64_t n, const kernels::LossSums& s,
                         const float* kept);
  struct PassResult {
    Reduced out;
    bool redo = false;  // exact: a gradient outgrew its scale; run the pass again
  };
  PassResult reduce(const Counts& c);
  // Kept gradients: whether this step keeps them, and a kept micro-batch replayed into the
  // model's gradient buffer (with the unit order of its backward) in place of its forward/backward.
  bool keep_gradients(int64_t rounds);  // (allocates the copies)
  // Micro-batch i's gradient (the model's, after its backward; tokens[n] its input ids, n < 0
  // for a padding round: every embedding row kept) and loss sums into the copies; clear: the
  // model's gradient is zeroed as it is copied (a move; for a deferred conversion).
  void keep(int64_t i, const int32_t* tokens, int64_t n, const kernels::LossSums& s, bool clear);
  kernels::LossSums replay(int64_t i);
  // clear: null or src itself, zeroed where copied.
  void copy_gradient(float* dst, const float* src, const std::vector<uint32_t>& rows,
                     bool rows_all, float* clear = nullptr) const;

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
  // Kept gradients: armed by a segment's first rescale (keep_gradients()); per micro-batch round its
  // fp32 gradient [P] (the embedding's untouched rows are not copied: zero), loss sums, the
  // units in the order its backward finished them.
  bool keep_armed_ = false;
  bool keeping_ = false;  // this pass copies each micro-batch's gradient as its backward ends
  std::vector<std::vector<float>> kept_;
  std::vector<kernels::LossSums> kept_sums_;
  std::vector<std::vector<std::pair<size_t, size_t>>> kept_units_;
  std::vector<std::vector<uint32_t>> kept_rows_;  // the embedding rows its tokens touched
  std::vector<char> kept_all_rows_;               // padding round: every row kept
};

}  // namespace olmo::dist
