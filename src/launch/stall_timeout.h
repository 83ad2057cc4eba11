// The stall watchdog's timeout for `olmo launch` (launcher.h): how long a job may go without a
// new train record in RUN_DIR/metrics.jsonl before it counts as hung (a frozen rank, a host cut
// off without its processes dying) and is stopped and relaunched from the newest checkpoint.
//   * fixed: --stall-timeout S (S > 0), the same for every gap; --stall-timeout 0: off;
//   * derived (the default), from the step times measured in metrics.jsonl (RunWatch):
//       before the job's first new train record (model build, checkpoint load, MPI wire-up):
//         the start-up allowance max(--stall-startup, 3 x the longest start this launcher saw);
//       after train record s: max(--stall-floor, 10 x the median plain gap,
//                                 2 x the longest heavy gap)
//       where a plain gap is the wall time between two consecutive train records, and a heavy
//       gap one with a checkpoint, evaluation, validation or benchmark record between them; when s is a step at which periodic work is due (a checkpoint, an
//       evaluation, validation, benchmarks, the audit window, the peak re-measure, the last
//       step) and no heavy gap was measured yet, the start-up allowance applies too: the first
//       save of a big model is never taken for a hang.
// Cost: a sort of the plain gaps when the job makes progress (not at every poll).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace olmo::launch {

struct StallOptions {
  double fixed_s = -1;        // --stall-timeout: > 0 fixed, 0 off, < 0 derived (the default)
  double floor_s = 60;        // --stall-floor: the derived timeout is never below this
  double startup_s = 600;     // --stall-startup: the start-up allowance (at least)
  double step_factor = 10;    // x the median plain gap
  double heavy_factor = 2;    // x the longest heavy gap
  double start_factor = 3;    // x the longest start measured (launch -> first new step)
};

// What the watchdog knows of the run's step times (filled by RunWatch from metrics.jsonl).
struct StepTimes {
  std::vector<double> plain_gaps;  // seconds, every plain gap of the file (all jobs)
  double longest_heavy_gap = 0;    // seconds, 0 when none measured
};

struct StallLimit {
  double seconds = 0;  // 0: no limit (the watchdog is off)
  std::string why;     // how it was derived, e.g. "max(60 s floor, 10 x median step gap 0.12 s)"
  double median_gap_s = 0;  // the median plain gap it used (derived, after a first step)
};

class StallTimeout {
 public:
  // heavy_intervals: the step intervals of periodic work (0 entries ignored); last_step: the
  // run's last step (heavy too).
  StallTimeout(const StallOptions& o, std::vector<int64_t> heavy_intervals, int64_t last_step);
  bool enabled() const { return o_.fixed_s != 0; }
  // The limit for the gap after train record `step` of a job; started = the job wrote a train
  // record of its own; longest_start: the longest launch -> first step measured (0: none yet).
  StallLimit limit(const StepTimes& t, bool started, int64_t step, double longest_start) const;
  // One line for the start event / --dry-run, e.g. "derived: max(60 s, 10 x median step ...)".
  std::string describe() const;

 private:
  bool heavy_step(int64_t step) const;
  StallOptions o_;
  std::vector<int64_t> intervals_;
  int64_t last_step_;
};

}  // namespace olmo::launch
