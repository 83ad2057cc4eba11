// The setup of a run (OLMo-core's TrainerConfig.build / TrainModuleConfig.build), in order:
//   1. validation of the config (files included) against the launched world (data.processes);
//      threads per process;
//   2. the model config of this CPU (train/model_setup.h) and the precision vote: precision auto
//      is probed in each process, bf16_mixed only where every rank chose it;
//   3. batch geometry: G instances per global batch; exact: one instance per forward/backward,
//      any W <= G (dist.reduce exact's limit on G); fast: M micro-batches of micro_instances,
//      W | M;
//   4. the memory plan against the available memory (trainer.check_memory; may switch
//      dist.exact_accumulator auto to the sharded accumulator), before any large allocation;
//   5. the test fault switches (train/test_faults.h; refused without allow_fault_injection);
//   6. rank 0 locks the run dir;
//   7. data: dataset, loader (exact: instances round-robin; fast: whole micro-batches per
//      rank), loss normalisation (auto: per_rank for packed_fsl, else global), schedule length
//      and this run's steps;
//   8. the model and the train module (reducer, optimizer, skip-step, schedule).
// The Trainer constructor (trainer_builder.cpp) takes these parts, registers the builder's
// callbacks (test faults, trainer.profile's StepProfiler) and then obtains the starting state
// (resume > phase start > HF weights > fresh init), measures the peaks and opens the metrics.
// Cost: the model and optimizer allocations (16 B per parameter plus the shards), opening the
// dataset; a CPU probe when precision is auto.
#pragma once
#include <cstdint>
#include <memory>

#include "ckpt/run_lock.h"
#include "data/instance_source.h"
#include "data/loader.h"
#include "distributed/communicator.h"
#include "model/olmo3.h"
#include "train/config.h"
#include "train/test_faults.h"
#include "train/train_module.h"

namespace olmo::train {

struct TrainerParts {
  Config cfg;                 // as resolved (data.processes = the launched world)
  dist::Communicator* comm = nullptr;
  int rank = 0, world = 1;
  std::unique_ptr<TestFaults> faults;   // null when no test switch is set
  std::unique_ptr<ckpt::RunDirLock> lock;
  std::unique_ptr<data::InstanceSource> dataset;
  std::unique_ptr<data::DataLoader> loader;
  std::unique_ptr<model::Olmo3> model;
  std::unique_ptr<TrainModule> module;
  bool doc_mask = false;      // data.generate_doc_lengths
  int64_t t_max = 0, total_steps = 0;
  double flops_per_token = 0;
};

// Steps 1-8 above. Collective (every rank calls it).
TrainerParts build_trainer_parts(Config cfg);

}  // namespace olmo::train
