// core/cpu: the override clamps to what the CPU supports and is reversible.
#include <gtest/gtest.h>

#include "core/cpu.h"

TEST(Cpu, OverrideClampsToDetected) {
  using olmo::Isa;
  Isa det = olmo::detected_isa();
  olmo::set_isa_override(Isa::scalar);
  EXPECT_EQ(olmo::active_isa(), Isa::scalar);
  olmo::set_isa_override(Isa::avx512);
  EXPECT_EQ(olmo::active_isa(), det);
  olmo::clear_isa_override();
  EXPECT_LE(static_cast<int>(olmo::active_isa()), static_cast<int>(det));
  EXPECT_STREQ(olmo::isa_name(Isa::avx2), "avx2");
}
