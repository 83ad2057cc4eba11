// ZeRO-3 parameter sharding (dist.zero_stage 3): the trainer's model::ParamProvider. Each rank
// keeps only its shard of the fp32 parameters (dist::ShardLayout of the reducer; the AdamW
// moments and the reduced gradient shard are the same shard, as under ZeRO-2). Per parameter
// unit (model/param_units.h: the embedding, each block, the head):
//   acquire:   all-gather of the unit's elements from every rank's shard into one working
//              buffer (GradReducer::gather_range), reused by the next unit (release);
//   grad:      a zeroed working gradient buffer of the unit's size;
//   grad_done: the unit's micro-batch gradient joins the exact fixed-point sum at once
//              (GradReducer::add_range: same integers as ZeRO-2, so the same bits after finish).
// So the forward gathers every unit once, the backward every unit but the embedding again
// (its backward needs no weights; with activation checkpointing the recompute uses the same
// gather), and nothing is prefetched: each gather waits for the wire. What that costs: olmo3-7b's
// block is 0.81 GB of fp32; at 12.5 GB/s (100 Gb/s) its gather takes ~65 ms against ~0.7 s
// of block forward for a 2 x 8192 micro-batch at 10 TFLOP/s, i.e. ~10% per pass. Overlapping
// it would take a third unit buffer and MPI progress during compute (a progress thread: the
// non-blocking collectives here only advance inside MPI calls).
// Memory per rank: the shard (4 P / W bytes) plus two working buffers of the largest unit
// (the embedding or the head, 4 V D bytes each, else a block), instead of 8 P bytes
// (bf16_mixed: the model's bf16 copy shrinks from 2 bytes per matrix parameter to one unit's).
// Collective: every rank makes the same calls in the same order (the model's forward/backward
// do). Outside TrainModule::train_batch the provider refuses (an evaluation on one rank would
// hang in the gather): evaluation needs the full parameters on that rank.
#pragma once
#include <cstdint>
#include <vector>

#include "distributed/zero.h"
#include "model/olmo3.h"
#include "model/param_units.h"

namespace olmo::dist {

class Zero3Params final : public model::ParamProvider {
 public:
  Zero3Params(GradReducer& reducer, const model::Olmo3& m);

  // Hands m this provider (m frees its full buffers, if it has any). The shard starts zero: the
  // trainer writes the starting state into it (init_weights_range, or a checkpoint's pieces).
  void attach(model::Olmo3& m);
  float* shard() { return shard_.data(); }
  const float* shard() const { return shard_.data(); }
  // TrainModule::train_batch opens the provider for its forward/backward passes.
  void set_open(bool open) { open_ = open; }

  const float* acquire(int64_t unit) override;
  void release(int64_t unit) override;
  float* grad(int64_t unit) override;
  void grad_done(int64_t unit) override;

  // Bytes of the shard and the two working buffers.
  size_t buffer_bytes() const;

 private:
  void check_open(const char* what) const;

  GradReducer& reducer_;
  std::vector<model::UnitRange> units_;
  std::vector<float> shard_;
  model::FloatBuffer work_, gwork_;  // parameters / gradient of one unit
  int64_t held_ = -1, grad_open_ = -1;
  bool open_ = false;
};

}  // namespace olmo::dist
