// The progress bar of every long command (see progress_bar.h). The only file of src/ and cli/
// that draws with "\r" (tests/core/one_progress_bar.py checks).
#include "core/progress_bar.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

namespace olmo {

namespace {

// Scale of a byte count: (divisor, name) chosen by the total, so done and total read alike.
std::pair<double, const char*> byte_scale(double total) {
  if (total >= 1e9) return {1e9, "GB"};
  if (total >= 1e6) return {1e6, "MB"};
  if (total >= 1e3) return {1e3, "kB"};
  return {1, "B"};
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

}  // namespace

ProgressBar::ProgressBar(int64_t total, std::string label, ProgressOptions opt)
    : total_(total), label_(std::move(label)), opt_(std::move(opt)) {
  const bool tty = opt_.bar_out && ::isatty(::fileno(opt_.bar_out));
  switch (opt_.mode) {
    case ProgressMode::automatic: bar_ = tty; break;
    case ProgressMode::on: bar_ = true; break;
    case ProgressMode::off: break;
    case ProgressMode::silent: silent_ = true; break;
  }
  lines_ = !bar_ && !silent_ && opt_.line_every > 0;
  if (opt_.width > 0) {
    width_ = opt_.width;
  } else if (tty) {
    struct winsize ws {};
    if (::ioctl(::fileno(opt_.bar_out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) width_ = ws.ws_col;
  }
  t0_ = now();
}

ProgressBar::~ProgressBar() { finish(); }

double ProgressBar::now() const {
  if (opt_.clock) return opt_.clock();
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string ProgressBar::counts(int64_t done) const {
  if (opt_.units == "B") {
    auto [div, name] = byte_scale(double(total_));
    const char* f = div == 1 ? "%.0f" : "%.1f";
    return fmt(f, double(done) / div) + "/" + fmt(f, double(total_) / div) + " " + name;
  }
  std::string s = std::to_string(done) + "/" + std::to_string(total_);
  return opt_.units.empty() ? s : s + " " + opt_.units;
}

std::string ProgressBar::stats(int64_t done, double t) const {
  const double el = t - t0_, n = double(done - opt_.start);
  if (!opt_.stats || el <= 0 || n <= 0) return "";
  const double rate = n / el;
  std::string r;
  if (opt_.units == "B") {
    auto [div, name] = byte_scale(double(total_));
    r = fmt("%.1f ", rate / div) + name + "/s";
  } else {
    const std::string num = fmt(rate >= 100 ? "%.0f" : "%.1f", rate);
    r = opt_.units.empty() ? num + "/s" : num + " " + opt_.units + "/s";
  }
  return r + " ETA " + format_duration(done >= total_ ? 0.0 : double(total_ - done) / rate);
}

std::string ProgressBar::bar_line(int64_t done, const std::string& suffix, double t) const {
  const int cells = 24;
  const double frac =
      total_ > 0 ? std::clamp(double(done) / double(total_), 0.0, 1.0) : 0.0;
  // (+1e-9: 0.3 * 100 is 29.999...; a count that is 30% shows 30%)
  const int filled = int(frac * cells + 1e-9);
  std::string s = label_.empty() ? "" : label_ + " ";
  s += "[" + std::string(size_t(filled), '#') + std::string(size_t(cells - filled), '.') + "] ";
  s += fmt("%3.0f%% ", std::floor(frac * 100 + 1e-9)) + counts(done);
  const std::string st = stats(done, t);
  if (!st.empty()) s += " " + st;
  if (!suffix.empty()) s += " " + suffix;
  if (int(s.size()) > width_ - 1) s.resize(size_t(std::max(width_ - 1, 0)));  // no wrap
  return s;
}

std::string ProgressBar::plain_line(int64_t done, const std::string& suffix, double t) const {
  std::string s = label_.empty() ? "" : label_ + " ";
  s += counts(done);
  const std::string st = stats(done, t);
  if (!st.empty()) s += " (" + st + ")";
  if (!suffix.empty()) s += " " + suffix;
  return s;
}

void ProgressBar::draw(int64_t done, const std::string& suffix, double t) {
  const std::string line = bar_line(done, suffix, t);
  std::fputc('\r', opt_.bar_out);
  std::fputs(line.c_str(), opt_.bar_out);
  std::fputs("\033[K", opt_.bar_out);  // erase what a longer earlier line left
  std::fflush(opt_.bar_out);
  drawn_ = ever_drawn_ = true;
  pending_ = false;
  last_draw_ = t;
}

void ProgressBar::clear() {
  if (!drawn_) return;
  std::fputs("\r\033[K", opt_.bar_out);
  std::fflush(opt_.bar_out);
  drawn_ = false;
}

void ProgressBar::update(int64_t done, const std::string& suffix) {
  if (silent_ || finished_) return;
  if (bar_) {
    last_done_ = done;
    last_suffix_ = suffix;
    const double t = now();
    if (!ever_drawn_ || done >= total_ || t - last_draw_ >= opt_.min_interval_s)
      draw(done, suffix, t);
    else
      pending_ = true;
  } else if (lines_ && line_due(done)) {
    std::fprintf(opt_.text_out, "%s\n", plain_line(done, suffix, now()).c_str());
    std::fflush(opt_.text_out);
  }
}

bool ProgressBar::line_due(int64_t done) const {
  return opt_.line_every > 0 && (done == 1 || done % opt_.line_every == 0 || done == total_);
}

void ProgressBar::message(const std::string& text) {
  if (silent_) return;
  const bool was_drawn = drawn_;
  clear();
  std::fprintf(opt_.text_out, "%s\n", text.c_str());
  std::fflush(opt_.text_out);
  if (was_drawn && !finished_) draw(last_done_, last_suffix_, now());
}

void ProgressBar::finish(bool keep) {
  if (finished_) return;
  finished_ = true;
  if (!bar_) return;
  if (!keep) {
    clear();
    return;
  }
  if (pending_) draw(last_done_, last_suffix_, now());
  if (drawn_) {
    std::fputc('\n', opt_.bar_out);
    std::fflush(opt_.bar_out);
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

}  // namespace olmo
