// The memory planner: per-process training memory of a model under every activation-checkpointing
// mode (model/act_checkpoint.h), the smallest data-parallel process count whose plan fits a node,
// and the recompute cost. Printed by `olmo train CONFIG --dry-run` and `olmo info`.
// Per mode: model::memory_plan (flops.h) with ModelConfig::act_ckpt set to that mode: full fp32
// weights and gradients per process (ZeRO-1/2), or (dist.zero_stage 3) the 1/W parameter shard
// plus two working buffers of the largest parameter unit; AdamW moments and the
// reduced-gradient shard 1/W, the exact accumulator (8 B/param local, or /W sharded), and the
// activations of one micro-batch. plan_text prints the run's stage and, for stage 2, the
// ZeRO-3 table as well. Recompute cost = extra forward FLOPs of the
// checkpointed blocks as a percentage of the step's training FLOPs (flops_per_token).
// Fit: one process per node; W fits a node of M GiB when the per-process total <= M GiB, with
// dist.exact_accumulator auto taking the sharded accumulator when the local one does not fit
// (the trainer's rule, Trainer::check_memory). Candidate W: the counts that split the global
// batch's micro-batches evenly (train::validate's rule), or 1..max_processes when unknown.
// The plan is a lower bound (no allocator slack, kernel scratch, page cache): the figures are
// checked against measured peak RSS at small scale by tests/train/memory_plan_test.cpp.
// Cost: O(modes x candidates x n_layers^2) arithmetic, microseconds.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/flops.h"

namespace olmo::train {

struct PlanInputs {
  int64_t seq_len = 0, micro_batch = 1;  // micro-batch = micro_batch x seq_len tokens
  int64_t processes = 1;                 // W of the per-process figures
  bool exact = true;                     // dist.reduce exact (false: fast)
  std::string exact_accumulator = "auto";  // auto | local | sharded
  // Micro-batches of the whole global batch (global_batch_tokens / micro_batch_tokens); 0 =
  // unknown: every W up to max_processes is a candidate and micro_batches_per_rank is fixed.
  int64_t global_micro_batches = 0;
  int64_t micro_batches_per_rank = 1;    // used when global_micro_batches is 0
  int64_t max_processes = 4096;
  std::vector<int64_t> node_gib = {256, 512};
  int zero_stage = 2;                    // dist.zero_stage: 2 or 3
};

struct ModeRow {
  std::string label;           // "none", "full", "selected_blocks 2", "budget 0.5", ...; the
                               // run's own mode (when not none) gets " (this run)"
  model::ActCheckpointing ac;
  int64_t checkpointed = 0;    // blocks checkpointed
  model::MemoryPlan plan;      // at PlanInputs::processes
  double recompute_pct = 0;    // extra forward FLOPs, % of the step's training FLOPs
  std::vector<int64_t> min_processes;  // per node size: smallest fitting W, -1 = none
};

// Rows for: none, selected_blocks 4, selected_blocks 2, budget 0.5, full, and `own` (the run's
// setting) when it is none of these.
std::vector<ModeRow> plan_modes(const model::ModelConfig& mc, const PlanInputs& in);
// The table as text (one line per mode, figures in GiB), with its assumptions.
std::string plan_text(const model::ModelConfig& mc, const PlanInputs& in);

}  // namespace olmo::train
