// The one stopwatch of a training run (Trainer::fit): monotonic seconds since the run's start,
// and the Unix time of any reading, derived from ONE Unix time taken at the start. So the
// difference of two metrics records' "time" fields is the monotonic wall time between them, to
// the millisecond the field is rounded to (metrics_log.h), and a throughput computed from the
// records agrees with the one the trainer logged. Cost: a clock read.
#pragma once
#include <chrono>
#include <cmath>

#include "core/timer.h"

namespace olmo::train {

class RunClock {
 public:
  RunClock() { start(); }
  void start() {
    mono0_ = now_seconds();
    unix0_ = std::chrono::duration<double>(
                 std::chrono::system_clock::now().time_since_epoch()).count();
  }
  // Seconds since start() of the monotonic reading `mono` (now_seconds()), or of now.
  double since_start(double mono) const { return mono - mono0_; }
  double seconds() const { return since_start(now_seconds()); }
  // The Unix time of the reading `s` seconds after start(), rounded to the millisecond.
  double unix_time(double s) const { return std::round((unix0_ + s) * 1000.0) / 1000.0; }

 private:
  double mono0_ = 0, unix0_ = 0;
};

}  // namespace olmo::train
