// Stop at a checkpoint boundary on request (the elastic launcher's resize, src/launch/).
// When the environment names a request file (OLMO_RESIZE_REQUEST=PATH, set by `olmo launch` for
// its jobs), each rank checks after every committed interval checkpoint (before the last step)
// whether rank 0 sees PATH; if so every rank stops there together: rank 0 logs
// {"kind":"info","event":"resize_stop","step":N} to metrics.jsonl, moves PATH to PATH.done
// (holding N), and ResizeStop is thrown, which `olmo train` turns into a clean exit 0.
// The run then resumes from stepN on another world size exactly as if it had been killed right
// after that checkpoint, so nothing is lost and nothing is done twice.
// It also writes {"kind":"info","event":"launch_job","job":ID,"step":S} at the start of a job
// (OLMO_LAUNCH_JOB=ID), which tells the launcher which records in metrics.jsonl are this job's.
// Cost: one stat on rank 0 and one one-byte collective per checkpoint; nothing when unset.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

#include "train/trainer.h"

namespace olmo::train {

struct ResizeStop : std::runtime_error {
  int64_t step;
  explicit ResizeStop(int64_t s);
};

class ResizeStopCallback : public Callback {
 public:
  ResizeStopCallback(std::string request_path, int64_t job)
      : path_(std::move(request_path)), job_(job) {}
  std::string name() const override { return "resize_stop"; }
  void on_start(Trainer& t) override;
  void on_step(Trainer& t, const StepResult& r) override;

 private:
  std::string path_;
  int64_t job_;
};

// Adds the callback when OLMO_RESIZE_REQUEST is set (after the checkpointer, so the step's
// checkpoint is committed when it runs).
void add_resize_stop(Trainer& t);

}  // namespace olmo::train
