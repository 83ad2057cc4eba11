// Monotonic wall clock in seconds.
#pragma once
#include <chrono>

namespace olmo {
inline double now_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}
}  // namespace olmo
