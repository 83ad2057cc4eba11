// ISA helpers for kernel tests (header-only): the dispatch levels this CPU can run, and a
// guard that clears olmo::set_isa_override when a test scope ends.
#pragma once
#include <vector>

#include "core/cpu.h"

namespace olmo::testing {

// scalar, avx2, avx512 up to what the CPU supports (always at least scalar).
inline std::vector<olmo::Isa> isas() {
  std::vector<olmo::Isa> v;
  for (int i = 0; i <= static_cast<int>(olmo::detected_isa()); ++i) v.push_back(olmo::Isa(i));
  return v;
}

struct IsaGuard {
  ~IsaGuard() { olmo::clear_isa_override(); }
};

}  // namespace olmo::testing
