// The stall watchdog's timeout (see stall_timeout.h).
#include "launch/stall_timeout.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"

namespace olmo::launch {

namespace {

std::string secs(double s) {
  char b[32];
  std::snprintf(b, sizeof b, s < 10 ? "%.3g s" : "%.0f s", s);
  return b;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t m = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + long(m), v.end());
  const double hi = v[m];
  if (v.size() % 2) return hi;
  return (hi + *std::max_element(v.begin(), v.begin() + long(m))) / 2;
}

}  // namespace

StallTimeout::StallTimeout(const StallOptions& o, std::vector<int64_t> heavy_intervals, int64_t last_step)
    : o_(o), last_step_(last_step) {
  OLMO_CHECK(o_.floor_s > 0, "--stall-floor must be > 0 seconds, got ", o_.floor_s);
  OLMO_CHECK(o_.startup_s > 0, "--stall-startup must be > 0 seconds, got ", o_.startup_s);
  for (int64_t i : heavy_intervals)
    if (i > 0) intervals_.push_back(i);
}

bool StallTimeout::heavy_step(int64_t step) const {
  if (step == last_step_) return true;
  for (int64_t i : intervals_)
    if (step % i == 0) return true;
  return false;
}

std::string StallTimeout::describe() const {
  if (o_.fixed_s == 0) return "off (--stall-timeout 0)";
  if (o_.fixed_s > 0) return cat("fixed: ", secs(o_.fixed_s), " without a new step (--stall-timeout)");
  return cat("derived: max(", secs(o_.floor_s), ", ", o_.step_factor, " x the median step gap, ",
             o_.heavy_factor, " x the longest checkpoint/eval gap) without a new step; ",
             secs(o_.startup_s), " (or ", o_.start_factor, " x the longest start) before a job's "
             "first step");
}

StallLimit StallTimeout::limit(const StepTimes& t, bool started, int64_t step, double longest_start) const {
  if (o_.fixed_s == 0) return {0, "off"};
  if (o_.fixed_s > 0) return {o_.fixed_s, "--stall-timeout"};
  const double startup = std::max(o_.startup_s, o_.start_factor * longest_start);
  const std::string startup_why =
      cat("start-up allowance max(", secs(o_.startup_s), ", ", o_.start_factor, " x the longest start ",
          secs(longest_start), ")");
  if (!started) return {startup, startup_why};
  const double med = median(t.plain_gaps);
  double s = std::max({o_.floor_s, o_.step_factor * med, o_.heavy_factor * t.longest_heavy_gap});
  std::string why = cat("max(", secs(o_.floor_s), " floor, ", o_.step_factor, " x median step gap ",
                        secs(med), " of ", t.plain_gaps.size(), ", ", o_.heavy_factor,
                        " x longest checkpoint/eval gap ", secs(t.longest_heavy_gap), ")");
  if (t.longest_heavy_gap == 0 && heavy_step(step) && startup > s) {
    s = startup;
    why = cat(startup_why, ": step ", step, " has periodic work due (checkpoint, eval...) and none was "
              "measured yet");
  }
  return {s, why, med};
}

}  // namespace olmo::launch
