// The dry-run plan of a training config (`olmo train CONFIG --dry-run`): everything that can be
// known without touching the run dir or training -- the model, its parameter count and FLOPs
// per token, the per-process memory plan, the batch geometry and step counts, and what the data
// files say (a named mix's census, the instance count of the token files when they are present).
// Pure: reads the config's data files when present, writes nothing; errors about the data are
// reported as notes, not thrown (a dry run on a machine without the data still plans).
// Cost: a CPU probe when precision is auto; opening the token files (no validation pass).
#pragma once
#include <cstdint>
#include <string>

#include "model/config.h"
#include "model/flops.h"
#include "train/config.h"

namespace olmo::train {

struct RunPlan {
  model::ModelConfig model;            // as this CPU would train it (model_config_for_this_cpu)
  model::ParamCounts params;
  double flops_per_token = 0;          // ours, at data.seq_len
  double olmo_core_flops_per_token = 0;  // OLMo-core's 6N + 12 L H d S
  int64_t micro_instances = 0;         // instances per micro-batch
  int64_t micro_batches = 0;           // per process per step
  int64_t processes = 1;               // data.processes (0 = 1 here: the launched world)
  bool exact = true;                   // dist.reduce exact
  bool local_accumulator = true;       // exact: local (true) or sharded accumulator
  model::MemoryPlan memory;            // per process
  int64_t global_instances = 0;        // G
  int64_t schedule_steps = 0;          // t_max
  int64_t run_steps = 0;               // this run (epoch hard stop needs batches_per_epoch)
  int64_t batches_per_epoch = 0;       // 0 when the token files are not readable
  std::string mix_note;                // a named mix's census, or why data.mix is unusable
  std::string data_note;               // instances and batches per epoch, or what is missing
};

// Validates c (without its files) and plans it.
RunPlan plan(const Config& c);

}  // namespace olmo::train
