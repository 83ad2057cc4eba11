// The run's peak: highest probe, raised to any achieved rate above it (see peak_tracker.h).
#include "kernels/peak_tracker.h"

#include <algorithm>
#include <cmath>

namespace olmo::kernels {

void PeakTracker::probe(double gflops) {
  if (!(gflops > 0) || !std::isfinite(gflops)) return;
  probed_ = std::max(probed_, gflops);
  peak_ = std::max(peak_, gflops);
}

double PeakTracker::mfu(double achieved_gflops) {
  if (!(peak_ > 0) || !(achieved_gflops > 0) || !std::isfinite(achieved_gflops)) return 0;
  if (achieved_gflops > peak_) {
    if (raises_++ == 0) first_ = {peak_, achieved_gflops};
    peak_ = achieved_gflops;
  }
  return 100.0 * (achieved_gflops / peak_);  // a ratio <= 1 first: exactly 100 at the peak
}

}  // namespace olmo::kernels
