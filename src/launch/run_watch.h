// What the launcher reads from a run dir while a job runs: the newest committed checkpoint, and
// the job's progress in RUN_DIR/metrics.jsonl (the last trained step, checkpoint save times).
// Records count only from the job's own {"event":"launch_job","job":ID} record on (written by
// src/train/resize_stop.h when OLMO_LAUNCH_JOB=ID): the file also holds earlier jobs' records,
// and is rewritten (a new file) when a job starts, so a new inode is read from its beginning.
// Cost: one stat per poll and a read of the new bytes.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

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

 private:
  std::string run_dir_;
  ino_t inode_ = 0;
  off_t offset_ = 0;
  int job_ = -1;
  int64_t start_step_ = -1, last_step_ = -1;
  std::string partial_;
  std::vector<double> save_s_;
};

}  // namespace olmo::launch
