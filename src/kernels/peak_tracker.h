// The peak an MFU is quoted against, over a whole run (trainer, `olmo bench step`).
//
// A probe (peak.h) on a shared machine can only come out low: other processes take cycles from
// it, never give it any. So the ceiling is the HIGHEST of every probe the run has made (and of
// peaks carried over, e.g. from a checkpoint of an earlier segment of the run), and an achieved
// rate above it proves the probe ran under load: the peak is raised to it. Every MFU goes through
// mfu(), which raises first, so an MFU is at most 100% by construction.
// All figures are GFLOP/s of one process. Cost: a compare.
#pragma once
#include <cstdint>

namespace olmo::kernels {

class PeakTracker {
 public:
  // A probe's result, or a peak carried over: the peak becomes the max (0 / negative: ignored).
  void probe(double gflops);
  // MFU in percent of `achieved_gflops`: 0 while there is no peak (probing off); an achieved
  // rate above the peak first raises the peak to it (raises() counts, first_raise() keeps the
  // first one's figures for the one log line).
  double mfu(double achieved_gflops);
  double peak() const { return peak_; }
  double highest_probe() const { return probed_; }
  int64_t raises() const { return raises_; }
  struct Raise {
    double from = 0, to = 0;
  };
  const Raise& first_raise() const { return first_; }

 private:
  double peak_ = 0, probed_ = 0;
  int64_t raises_ = 0;
  Raise first_;
};

}  // namespace olmo::kernels
