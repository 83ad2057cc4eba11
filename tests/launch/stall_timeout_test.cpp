// The stall watchdog's timeout rule (src/launch/stall_timeout.h): off, fixed, and derived from
// measured step gaps (the floor, 10 x the median plain gap, 2 x the longest heavy gap), the
// start-up allowance before a job's first step and at periodic work not yet measured.
#include <gtest/gtest.h>

#include "core/error.h"
#include "launch/stall_timeout.h"

using namespace olmo::launch;

namespace {
StallOptions derived(double floor_s = 60, double startup_s = 600) {
  StallOptions o;
  o.floor_s = floor_s;
  o.startup_s = startup_s;
  return o;
}
}  // namespace

TEST(StallTimeout, OffAndFixed) {
  StallOptions off;
  off.fixed_s = 0;
  StallTimeout a(off, {}, 100);
  EXPECT_FALSE(a.enabled());
  EXPECT_EQ(a.limit({{1.0}, 0}, true, 3, 0).seconds, 0);
  EXPECT_EQ(a.describe(), "off (--stall-timeout 0)");
  StallOptions fixed;
  fixed.fixed_s = 7.5;
  StallTimeout b(fixed, {10}, 100);
  EXPECT_EQ(b.limit({}, false, -1, 0).seconds, 7.5);  // no start-up allowance either
  EXPECT_EQ(b.limit({{100.0}, 500}, true, 10, 0).seconds, 7.5);
}

TEST(StallTimeout, DerivedFromTheMedianStep) {
  StallTimeout t(derived(), {0, 50}, 1000);
  // Fast steps: the floor.
  EXPECT_DOUBLE_EQ(t.limit({{0.1, 0.2, 0.1}, 0.5}, true, 3, 0).seconds, 60);
  // Slow steps: 10 x the median (the outlier 100 s does not move it).
  StallLimit l = t.limit({{8, 9, 100, 7, 9}, 20}, true, 3, 0);
  EXPECT_DOUBLE_EQ(l.seconds, 90);
  EXPECT_DOUBLE_EQ(l.median_gap_s, 9);
  // Even count: the mean of the two middle gaps.
  EXPECT_DOUBLE_EQ(t.limit({{7, 9, 10, 8}, 0}, true, 3, 0).seconds, 85);
  // A long save measured: 2 x it.
  EXPECT_DOUBLE_EQ(t.limit({{8, 9, 9}, 70}, true, 3, 0).seconds, 140);
}

TEST(StallTimeout, StartUpAllowance) {
  StallTimeout t(derived(60, 600), {50}, 1000);
  EXPECT_DOUBLE_EQ(t.limit({{1, 1}, 2}, false, -1, 0).seconds, 600);    // before the first step
  EXPECT_DOUBLE_EQ(t.limit({{1, 1}, 2}, false, -1, 300).seconds, 900);  // 3 x a measured start
  // Step 50 has periodic work due: before any heavy gap was measured it gets the allowance,
  // after one was, 2 x that one; step 51 (nothing due) never does; the last step does.
  EXPECT_DOUBLE_EQ(t.limit({{1, 1}, 0}, true, 50, 0).seconds, 600);
  EXPECT_DOUBLE_EQ(t.limit({{1, 1}, 40}, true, 50, 0).seconds, 80);
  EXPECT_DOUBLE_EQ(t.limit({{1, 1}, 0}, true, 51, 0).seconds, 60);
  EXPECT_DOUBLE_EQ(t.limit({{1, 1}, 0}, true, 1000, 0).seconds, 600);
}

TEST(StallTimeout, BadOptions) {
  EXPECT_THROW(StallTimeout(derived(0), {}, 10), olmo::Error);
  EXPECT_THROW(StallTimeout(derived(60, -1), {}, 10), olmo::Error);
}
