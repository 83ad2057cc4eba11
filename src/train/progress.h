// Console output of a run: on a terminal (stderr is a tty, or forced on) a one-line progress bar
// redrawn in place; otherwise plain log lines on stdout every `every` steps. Either way the
// bar/line shows step/total, loss, tokens/s, MFU and ETA. Cost: one short write per step.
#pragma once
#include <cstdint>
#include <string>

namespace olmo::train {

// auto: a bar when stderr is a terminal; on: a bar; off: plain lines; silent: nothing (ranks > 0).
// kProgressModeNames holds the names in this order (trainer.progress takes the first three).
enum class ProgressMode { automatic, on, off, silent };
inline constexpr const char* kProgressModeNames[] = {"auto", "on", "off", "silent"};

class Progress {
 public:
  Progress(int64_t total_steps, ProgressMode mode, int64_t every);
  // A training step finished; `summary` is the text after the bar (loss, tok/s, ...).
  void step(int64_t step, const std::string& summary);
  // A message that must not be overwritten by the bar (eval results, checkpoints).
  void message(const std::string& text);
  void finish();
  bool bar() const { return bar_; }

 private:
  void clear_line();
  int64_t total_, every_;
  bool bar_ = false, drawn_ = false, silent_ = false;
};

// "1h02m", "3m12s", "45s".
std::string format_duration(double seconds);

}  // namespace olmo::train
