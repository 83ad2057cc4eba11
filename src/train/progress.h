// Console output of a run, on core's ProgressBar (core/progress_bar.h): on a terminal (stderr is
// a tty, or forced on) a one-line bar redrawn in place on stderr; otherwise plain log lines on
// stdout, "step N/TOTAL SUMMARY", at step 1, every `every` steps and the last. Either way the
// bar/line shows step/total and the trainer's summary (loss, tokens/s, MFU and its ETA).
// Messages (checkpoints, validation, alarms) go to stdout and are never overwritten by the bar.
// Cost: one short write per drawn step (the bar: at most ~10 redraws a second).
#pragma once
#include <cstdint>
#include <string>

#include "core/progress_bar.h"

namespace olmo::train {

// auto: a bar when stderr is a terminal; on: a bar; off: plain lines; silent: nothing (ranks > 0).
// kProgressModeNames holds the names in this order (trainer.progress takes the first three).
using olmo::ProgressMode;
inline constexpr const char* kProgressModeNames[] = {"auto", "on", "off", "silent"};

class Progress {
 public:
  Progress(int64_t total_steps, ProgressMode mode, int64_t every);
  // A training step finished; `summary` is the text after the bar (loss, tok/s, ...).
  void step(int64_t step, const std::string& summary) { bar_.update(step, summary); }
  // A message that must not be overwritten by the bar (eval results, checkpoints).
  void message(const std::string& text) { bar_.message(text); }
  // The end of the run: the last bar stays on the screen.
  void finish() { bar_.finish(/*keep=*/true); }
  bool bar() const { return bar_.drawing(); }
  // Whether `step` ends a plain log line (step 1, every `every`-th, the last): the trainer's
  // figures on a line cover the wall time since the previous such step.
  bool line_due(int64_t step) const { return bar_.line_due(step); }

 private:
  ProgressBar bar_;
};

using olmo::format_duration;  // "1h02m", "3m12s", "45s"

}  // namespace olmo::train
