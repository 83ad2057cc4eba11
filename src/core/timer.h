// Monotonic wall clock in seconds, and the one way a call's wall time is added to a running total
// (e.g. the seconds a step spends inside communication calls):
//   const bool b = timed(comm_s_, [&] { return comm_.any(bad); });   // one call
//   { AddSeconds in_comm(comm_s_); ...several calls...; }                // a scope
// Cost: two clock reads.
#pragma once
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
}  // namespace olmo
