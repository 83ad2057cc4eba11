// The one progress bar of every long command (train, prepare, audit, evaluate, export).
// On a terminal (the bar's stream is a tty, or mode `on`) one line redrawn in place:
//   LABEL [#########...............]  37% 370/1000 docs 12.3 docs/s ETA 51s SUFFIX
// (units "B": byte counts shown as kB/MB/GB; `stats` off drops rate and ETA). Otherwise plain
// lines "LABEL DONE/TOTAL[ UNITS][ (rate, ETA)] SUFFIX" at the first, every line_every-th and
// the last unit (line_every 0: nothing at all, which is what every command but train wants).
// message() prints a line that the bar does not overwrite (the bar is cleared first and redrawn
// below it). finish() clears the bar line (or keeps it, ending it with a newline); the
// destructor finishes, so an exception does not leave a half-drawn line before its message.
// Contract: the bar goes to bar_out (stderr), lines and messages to text_out (stdout), so a
// command's stdout is the same with and without a terminal. Not thread-safe: one thread updates.
// Cost: update() is one clock read and a compare; a redraw (at most one per min_interval_s,
// default 0.1 s, plus the first and the last) formats and writes one short line.
#pragma once
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

namespace olmo {

// automatic: a bar when bar_out is a terminal, else plain lines (line_every > 0) or nothing;
// on: a bar even when bar_out is no terminal; off: plain lines (or nothing); silent: nothing,
// messages included (ranks > 0 of a distributed run).
enum class ProgressMode { automatic, on, off, silent };

struct ProgressOptions {
  ProgressMode mode = ProgressMode::automatic;
  std::string units;            // after the count: "docs", "tensors"; "B": bytes, scaled
  bool stats = true;            // rate and ETA (from the units done since construction)
  int64_t start = 0;            // units already done before this run (a resume): not in the rate
  int64_t line_every = 0;       // plain lines: unit 1, every line_every-th, the last; 0: none
  FILE* bar_out = stderr;       // the bar, redrawn in place
  FILE* text_out = stdout;      // plain lines and message()
  double min_interval_s = 0.1;  // the least time between two redraws (first and last: always)
  int width = 0;                // columns (the line is cut to width - 1); 0: the terminal's, or 100
  std::function<double()> clock;  // seconds, monotonic; empty: std::chrono::steady_clock
};

class ProgressBar {
 public:
  ProgressBar(int64_t total, std::string label, ProgressOptions opt = {});
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // `done` of `total` units are done; `suffix` is shown after the counts (loss, file name...).
  void update(int64_t done, const std::string& suffix = "");
  // A line that stays: clears the bar, prints text + "\n" to text_out, redraws the bar.
  void message(const std::string& text);
  // Ends the bar: the line is cleared (keep: the final state is drawn and kept, plus "\n").
  // Later updates draw nothing. Called by the destructor.
  void finish(bool keep = false);
  bool drawing() const { return bar_; }  // a bar (not plain lines, not nothing)
  // Whether unit `done` is one a plain line is printed at (the first, every line_every-th, the
  // last; never with line_every 0), whatever the mode.
  bool line_due(int64_t done) const;

  // The bar line / plain line for `done` at `now` (exposed for tests; no I/O).
  std::string bar_line(int64_t done, const std::string& suffix, double now) const;
  std::string plain_line(int64_t done, const std::string& suffix, double now) const;

 private:
  double now() const;
  void draw(int64_t done, const std::string& suffix, double t);
  void clear();
  std::string counts(int64_t done) const;
  std::string stats(int64_t done, double now) const;

  int64_t total_;
  std::string label_;
  ProgressOptions opt_;
  bool bar_ = false, lines_ = false, silent_ = false, finished_ = false;
  bool drawn_ = false;    // the bar line is on the screen
  bool pending_ = false;  // the last update was not drawn (rate limit)
  int width_ = 100;
  double t0_ = 0, last_draw_ = 0;
  bool ever_drawn_ = false;
  int64_t last_done_ = 0;
  std::string last_suffix_;
};

// "1h02m", "3m12s", "45s"; "?" for a negative or non-finite time.
std::string format_duration(double seconds);

}  // namespace olmo
