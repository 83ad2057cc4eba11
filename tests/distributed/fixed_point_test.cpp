// 128-bit fixed point of doubles (distributed/fixed_point.h, the loss sums): exact round trips,
// round half to even, the out-of-range flag, and sums that do not depend on partition or order.
#include "distributed/fixed_point.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace olmo::dist;

TEST(FixedPoint, DoubleConversion) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(-1e6, 1e6);
  for (int i = 0; i < 10000; ++i) {
    double x = u(rng);
    bool bad = false;
    i128 v = double_to_fixed(x, &bad);
    ASSERT_FALSE(bad);
    // |x| >= 2^-11 here: 53 bits above 2^-64 => exact
    if (std::fabs(x) >= 1.0) {
      ASSERT_EQ(fixed_to_double(v), x);
    }
  }
  bool bad = false;
  double_to_fixed(std::ldexp(1.0, 61), &bad);
  EXPECT_TRUE(bad);
}

TEST(FixedPoint, RoundsHalfToEvenAndSumsInAnyOrder) {
  bool bad = false;
  // 2^-65 is half of the last unit: ties go to even (0), 3 * 2^-65 rounds to 2 units.
  EXPECT_TRUE(to_fixed(std::ldexp(1.0, -65), 64, 60, &bad) == 0);
  EXPECT_TRUE(to_fixed(std::ldexp(3.0, -65), 64, 60, &bad) == 2);
  EXPECT_TRUE(to_fixed(-std::ldexp(3.0, -65), 64, 60, &bad) == -2);
  EXPECT_FALSE(bad);
  to_fixed(std::nan(""), 64, 60, &bad);
  EXPECT_TRUE(bad);
  bad = false;
  std::mt19937_64 rng(3);
  std::normal_distribution<double> nd(0, 1);
  std::vector<double> x(500);
  for (auto& v : x) v = std::ldexp(nd(rng), int(rng() % 60) - 40);
  i128 ref = 0;
  for (double v : x) ref += double_to_fixed(v, &bad);
  for (int trial = 0; trial < 5; ++trial) {
    std::shuffle(x.begin(), x.end(), rng);
    i128 parts[3] = {0, 0, 0};
    for (size_t i = 0; i < x.size(); ++i) parts[rng() % 3] += double_to_fixed(x[i], &bad);
    EXPECT_TRUE(parts[2] + parts[0] + parts[1] == ref);
  }
  EXPECT_FALSE(bad);
}
