// Peak calibration: returns a plausible positive GFLOP/s under each ISA, quickly. (Speed
// figures themselves belong to bench/, not to tests.)
#include <gtest/gtest.h>

#include <cmath>

#include "core/cpu.h"
#include "core/timer.h"
#include "kernels/peak.h"

TEST(Peak, PlausibleUnderEachIsaAndBoundedTime) {
  for (int i = 0; i <= int(olmo::detected_isa()); ++i) {
    olmo::set_isa_override(olmo::Isa(i));
    double t0 = olmo::now_seconds();
    double g = olmo::kernels::measure_fp32_peak_gflops(0.02, 1);
    double dt = olmo::now_seconds() - t0;
    EXPECT_TRUE(std::isfinite(g)) << olmo::isa_name(olmo::Isa(i));
    // One core does at least ~0.5 GFLOP/s even scalar, and far less than 10 TFLOP/s.
    EXPECT_GT(g, 0.5) << olmo::isa_name(olmo::Isa(i));
    EXPECT_LT(g, 1e4) << olmo::isa_name(olmo::Isa(i));
    EXPECT_LT(dt, 2.0) << olmo::isa_name(olmo::Isa(i));
  }
  olmo::clear_isa_override();
}
