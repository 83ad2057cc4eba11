// The step profile of a run (trainer.profile), attached as a callback: the profiler
// (core/profile.h) is on from pre_step to post_step of every step after the first, so the table
// covers train_step alone (callbacks, evaluation and checkpoints run with it off); at the end
// of fit() the mean per step goes to the console and to metrics.jsonl ({"kind":"profile"}).
// Cost: the profiler's own (a clock read per profiled region) on profiled steps only.
#pragma once
#include <cstdint>
#include <string>

#include "train/callback.h"

namespace olmo::train {

class StepProfiler : public Callback {
 public:
  std::string name() const override { return "step_profiler"; }
  void pre_step(Trainer& t, data::DataLoader::Batch& b) override;
  void post_step(Trainer& t, const StepResult& r) override;
  void on_end(Trainer& t) override;

 private:
  double seconds_ = 0;
  int64_t steps_ = -1;  // -1 while the first (unprofiled) step runs
};

}  // namespace olmo::train
