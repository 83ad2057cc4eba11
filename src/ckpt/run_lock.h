// Exclusive lock on a run directory: flock(LOCK_EX|LOCK_NB) on RUN_DIR/.lock (or another file
// name: `olmo launch` holds RUN_DIR/.launch.lock while its jobs take .lock), the holder's pid
// written into the file. A second process (or a second lock in this process) gets
// olmo::Error("run dir X is locked by pid P ...") and changes nothing. The OS drops the lock when
// the holder exits, even on a crash, so a stale .lock file never blocks a restart.
#pragma once
#include <string>

namespace olmo::ckpt {

class RunDirLock {
 public:
  // Creates run_dir if missing.
  explicit RunDirLock(const std::string& run_dir, const std::string& name = ".lock");
  ~RunDirLock();
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;
  const std::string& run_dir() const { return run_dir_; }

 private:
  std::string run_dir_;
  int fd_ = -1;
};

}  // namespace olmo::ckpt
