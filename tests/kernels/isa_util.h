// ISA helpers for kernel tests (header-only): the dispatch levels this CPU can run (each level it
// lacks announced, never dropped silently), and a guard that clears olmo::set_isa_override when
// a test scope ends.
#pragma once
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "core/cpu.h"

namespace olmo::testing {

// Announces a part of the running test case not run here, once per test case and text:
// "NOT RUN here: Suite.Case: WHAT (WHY)". WHY names the missing feature as tests/check_skips.py
// matches it ("this CPU lacks AVX-512"); check_skips lists the line under the passed test.
inline void not_run(const std::string& what, const std::string& why) {
  static std::set<std::string> told;
  const ::testing::TestInfo* t = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string line = "NOT RUN here: " +
                           (t ? std::string(t->test_suite_name()) + "." + t->name() + ": " : "") +
                           what + " (" + why + ")";
  if (told.insert(line).second) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }
}

// The feature a dispatch level needs, as check_skips.py names it.
inline const char* isa_feature(olmo::Isa isa) {
  return isa == olmo::Isa::avx512 ? "AVX-512" : isa == olmo::Isa::avx2 ? "AVX2" : "nothing";
}

// scalar, avx2, avx512 up to what the CPU supports and `upto` (always at least scalar); a level
// up to `upto` that the CPU lacks is announced (not_run).
inline std::vector<olmo::Isa> isas(olmo::Isa upto = olmo::Isa::avx512) {
  std::vector<olmo::Isa> v;
  for (int i = 0; i <= static_cast<int>(upto); ++i) {
    if (i <= static_cast<int>(olmo::detected_isa()))
      v.push_back(olmo::Isa(i));
    else
      not_run(std::string("the ") + olmo::isa_name(olmo::Isa(i)) + " kernels",
              std::string("this CPU lacks ") + isa_feature(olmo::Isa(i)));
  }
  return v;
}

struct IsaGuard {
  ~IsaGuard() { olmo::clear_isa_override(); }
};

}  // namespace olmo::testing
