// Progress bar / log lines (see progress.h).
#include "train/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace olmo::train {

Progress::Progress(int64_t total_steps, ProgressMode mode, int64_t every)
    : total_(total_steps), every_(every < 1 ? 1 : every) {
  silent_ = mode == ProgressMode::silent;
  bar_ = mode == ProgressMode::on ||
         (mode == ProgressMode::automatic && isatty(fileno(stderr)));
}

void Progress::clear_line() {
  if (bar_ && drawn_) {
    std::fprintf(stderr, "\r\033[K");
    drawn_ = false;
  }
}

void Progress::step(int64_t step, const std::string& summary) {
  if (silent_) return;
  if (bar_) {
    const int width = 24;
    double frac = total_ > 0 ? double(step) / double(total_) : 0.0;
    int filled = int(std::lround(frac * width));
    std::string b(filled, '#');
    b += std::string(width - filled, '.');
    std::fprintf(stderr, "\r\033[K[%s] %lld/%lld %s", b.c_str(), (long long)step,
                 (long long)total_, summary.c_str());
    std::fflush(stderr);
    drawn_ = true;
  }
  if (!bar_ && (step % every_ == 0 || step == total_ || step == 1)) {
    std::printf("step %lld/%lld %s\n", (long long)step, (long long)total_, summary.c_str());
    std::fflush(stdout);
  }
}

void Progress::message(const std::string& text) {
  if (silent_) return;
  clear_line();
  std::printf("%s\n", text.c_str());
  std::fflush(stdout);
}

void Progress::finish() {
  if (bar_ && drawn_) {
    std::fprintf(stderr, "\n");
    drawn_ = false;
  }
}

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  long long t = (long long)std::lround(s);
  char buf[32];
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%lldh%02lldm", t / 3600, (t % 3600) / 60);
  else if (t >= 60) std::snprintf(buf, sizeof buf, "%lldm%02llds", t / 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%llds", t);
  return buf;
}

}  // namespace olmo::train
