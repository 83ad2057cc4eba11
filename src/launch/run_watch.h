// What the launcher reads from a run dir while a job runs: the newest committed checkpoint, and
// the job's progress in RUN_DIR/metrics.jsonl (the last trained step, checkpoint save times).
// Records count only from the job's own {"event":"launch_job","job":ID} record on (written by
// src/train/resize_stop.h when OLMO_LAUNCH_JOB=ID): the file also holds earlier jobs' records,
// and is rewritten (a new file) when a job starts, so a new inode is read from its beginning.
// Step times for the stall watchdog (stall_timeout.h) come from every job's records in the file:
// the wall time ("time") between consecutive train records, plain or heavy (a checkpoint,
// eval, validation or benchmark record between them), never across a job's start.
// Cost: one stat per poll and a read of the new bytes.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "launch/stall_timeout.h"

namespace olmo::launch {

// Step of the newest committed checkpoint in run_dir (stepN/COMMITTED), -1 when none.
int64_t newest_checkpoint(const std::string& run_dir);

class RunWatch {
 public:
  explicit RunWatch(std::string run_dir) : run_dir_(std::move(run_dir)) {}
  // Job `id` is being launched: only its records count from now on.
  void relaunched(int id);
  // Reads what was appended (or the new file).
  void poll();
  bool started() const { return start_step_ >= 0; }  // the job's launch_job record was seen
  int64_t start_step() const { return start_step_; }  // the step it started from (-1 before)
  int64_t last_step() const { return last_step_; }    // its last train record (-1 before)
  const std::vector<double>& save_seconds() const { return save_s_; }  // every save seen
  const StepTimes& step_times() const { return times_; }  // every job's, the whole file

 private:
  void step_time(const std::string& kind, const std::string& event, double time);
  std::string run_dir_;
  ino_t inode_ = 0;
  off_t offset_ = 0;
  int job_ = -1;
  int64_t start_step_ = -1, last_step_ = -1;
  std::string partial_;
  std::vector<double> save_s_;
  StepTimes times_;
  double prev_train_time_ = -1;  // "time" of the last train record (-1: none since a job start)
  bool between_ = false;         // another record came after it
};

}  // namespace olmo::launch
