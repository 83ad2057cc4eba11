// Monotonic wall clock in seconds, and the one way a call's wall time is added to a running total
// (e.g. the seconds a step spends inside communication calls):
//   const bool b = timed(comm_s_, [&] { return comm_.any(bad); });   // one call
//   { AddSeconds in_comm(comm_s_); ...several calls...; }                // a scope
// Cost: two clock reads.
// Also the CPU time of the process (all threads) and of the calling thread, in seconds.
#pragma once
#include <time.h>

#include <algorithm>
#include <chrono>

namespace olmo {
inline double now_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// Adds the wall time of its scope to `sink` when it ends.
class AddSeconds {
 public:
  explicit AddSeconds(double& sink) : sink_(sink), t0_(now_seconds()) {}
  ~AddSeconds() { sink_ += now_seconds() - t0_; }
  AddSeconds(const AddSeconds&) = delete;
  AddSeconds& operator=(const AddSeconds&) = delete;

 private:
  double& sink_;
  double t0_;
};

// Calls f(), adds its wall time to `sink`, returns what f returned.
template <class F>
decltype(auto) timed(double& sink, F&& f) {
  AddSeconds t(sink);
  return f();
}

// CPU time of every thread of the process: on a shared machine, (cpu seconds) / threads is the
// time a parallel region would take with the cores to itself (threads spinning at a barrier
// count as busy, so it errs slow).
inline double process_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}
// CPU time of the calling thread alone (excludes the time it was preempted).
inline double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// The probes' timing: call() once untimed (allocation, first touch), then `reps` times; the
// fastest of those by `clock` (now_seconds, thread_cpu_seconds, ...), in seconds.
template <class F, class Clock>
double best_seconds(int reps, F&& call, Clock clock) {
  call();
  double b = 1e30;
  for (int i = 0; i < reps; ++i) {
    const double t0 = clock();
    call();
    b = std::min(b, clock() - t0);
  }
  return b;
}
}  // namespace olmo
