// Monotonic wall clock in seconds; the CPU time of the process (all threads) and of the calling
// thread, in seconds.
#pragma once
#include <time.h>

#include <chrono>

namespace olmo {
inline double now_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
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
}  // namespace olmo
