// Fixed-point conversions (dist/fixed_point.h) against the slow references and exact
// arithmetic, and the property the exact reduction rests on: a sum over any partition and order
// gives the same bits.
#include "distributed/fixed_point.h"

#include "core/cpu.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace olmo::dist;

namespace {
float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
}  // namespace

TEST(FixedPoint, FloatConversionEqualsReferenceOnRandomBitPatterns) {
  std::mt19937 rng(7);
  int tested = 0;
  for (int i = 0; i < 200000; ++i) {
    float x = from_bits(rng());
    bool b1 = false, b2 = false;
    i128 a = float_to_fixed(x, &b1), r = float_to_fixed_reference(x, &b2);
    ASSERT_EQ(b1, b2) << x;
    if (b1) continue;
    ASSERT_TRUE(a == r) << "x=" << x;
    ++tested;
  }
  EXPECT_GT(tested, 50000);
}

TEST(FixedPoint, BulkKernelsEqualTheScalarConversionUnderEveryIsa) {
  std::mt19937 rng(9);
  const size_t n = 100003;
  std::vector<float> x(n);
  for (auto& v : x) {
    do v = from_bits(rng()); while (!std::isfinite(v) || std::fabs(v) >= std::ldexp(1.0f, 28));
  }
  for (olmo::Isa isa : {olmo::Isa::scalar, olmo::Isa::avx2, olmo::Isa::avx512}) {
    if (int(isa) > int(olmo::detected_isa())) continue;
    olmo::set_isa_override(isa);
    std::vector<uint64_t> lo(n, 0), hi(n, 0), lo2(n), hi2(n);
    ASSERT_FALSE(convert_fixed(lo2.data(), hi2.data(), x.data(), n));
    ASSERT_FALSE(accumulate_fixed(lo.data(), hi.data(), x.data(), n));
    ASSERT_FALSE(accumulate_fixed(lo.data(), hi.data(), x.data(), n));
    add_fixed(lo.data(), hi.data(), lo2.data(), hi2.data(), n);  // 3x
    std::vector<float> back(n);
    fixed_to_floats(back.data(), lo2.data(), hi2.data(), n);
    for (size_t i = 0; i < n; ++i) {
      bool bad = false;
      const i128 v = float_to_fixed(x[i], &bad);
      ASSERT_TRUE(join(lo2[i], hi2[i]) == v) << olmo::isa_name(isa) << " x=" << x[i];
      ASSERT_TRUE(join(lo[i], hi[i]) == 3 * v) << olmo::isa_name(isa) << " x=" << x[i];
      ASSERT_EQ(back[i], fixed_to_float_reference(v)) << olmo::isa_name(isa) << " x=" << x[i];
    }
  }
  olmo::clear_isa_override();
}

// Runs of +-0 (all-zero vectors take a shortcut in both kernels): a conversion must still store
// zeros over whatever the output held, an accumulation must leave the accumulator as it was.
TEST(FixedPoint, BulkKernelsOnZeroRunsUnderEveryIsa) {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const size_t n = 1031;
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i)
    x[i] = (i % 97 < 60) ? ((i % 2) ? 0.0f : -0.0f) : nd(rng);  // zero runs of 60, odd offsets
  for (olmo::Isa isa : {olmo::Isa::scalar, olmo::Isa::avx2, olmo::Isa::avx512}) {
    if (int(isa) > int(olmo::detected_isa())) continue;
    olmo::set_isa_override(isa);
    std::vector<uint64_t> lo(n, 0xababababababababull), hi(n, 0x5a5a5a5a5a5a5a5aull);
    ASSERT_FALSE(convert_fixed(lo.data(), hi.data(), x.data(), n));
    std::vector<uint64_t> lo2 = lo, hi2 = hi;
    ASSERT_FALSE(accumulate_fixed(lo2.data(), hi2.data(), x.data(), n));  // 2x
    for (size_t i = 0; i < n; ++i) {
      bool bad = false;
      const i128 v = float_to_fixed(x[i], &bad);
      ASSERT_TRUE(join(lo[i], hi[i]) == v) << olmo::isa_name(isa) << " i=" << i;
      ASSERT_TRUE(join(lo2[i], hi2[i]) == 2 * v) << olmo::isa_name(isa) << " i=" << i;
    }
  }
  olmo::clear_isa_override();
}

TEST(FixedPoint, BulkToFloatRoundsRandom128BitIntegersOnce) {
  std::mt19937_64 rng(13);
  const size_t n = 50001;
  std::vector<uint64_t> lo(n), hi(n);
  for (size_t i = 0; i < n; ++i) {
    lo[i] = rng();
    const int bits = int(rng() % 64);  // magnitudes of every size, both signs
    hi[i] = bits == 0 ? 0 : (rng() >> (64 - bits));
    if (i % 7 == 0) lo[i] &= 0xffffffff00000000ull;  // exact halves and sticky corner cases
    if (i % 11 == 0) lo[i] = 0;
    if (rng() & 1) {  // negate
      const i128 v = -join(lo[i], hi[i]);
      lo[i] = uint64_t(v);
      hi[i] = uint64_t(static_cast<unsigned __int128>(v) >> 64);
    }
  }
  for (olmo::Isa isa : {olmo::Isa::scalar, olmo::Isa::avx2, olmo::Isa::avx512}) {
    if (int(isa) > int(olmo::detected_isa())) continue;
    olmo::set_isa_override(isa);
    std::vector<float> out(n);
    fixed_to_floats(out.data(), lo.data(), hi.data(), n);
    for (size_t i = 0; i < n; ++i) {
      const i128 v = join(lo[i], hi[i]);
      ASSERT_EQ(out[i], fixed_to_float_reference(v)) << olmo::isa_name(isa) << " i=" << i;
      ASSERT_EQ(fixed_to_float(v), fixed_to_float_reference(v)) << i;
    }
  }
  olmo::clear_isa_override();
}

TEST(FixedPoint, ExactForNormalGradientsAndRoundTrips) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int i = 0; i < 100000; ++i) {
    // magnitudes from 2^-60 to 2^20: all exactly representable at 2^-88
    float x = std::ldexp(nd(rng), int(rng() % 80) - 60);
    if (std::fabs(x) < std::ldexp(1.0f, -64)) continue;  // below 2^-64 bits are rounded away
    bool bad = false;
    i128 v = float_to_fixed(x, &bad);
    ASSERT_FALSE(bad);
    ASSERT_EQ(fixed_to_float(v), x);
    ASSERT_EQ(fixed_to_float_reference(v), x);
    // exactness: v == x * 2^88 in long double arithmetic (64-bit mantissa holds it)
    ASSERT_EQ((long double)v, std::ldexp((long double)x, kGradShift));
  }
}

TEST(FixedPoint, RoundsHalfToEvenBelowTheLsb) {
  bool bad = false;
  // 2^-89 is half an LSB: rounds to 0 (even); 3 * 2^-89 = 1.5 LSB rounds to 2.
  EXPECT_TRUE(float_to_fixed(std::ldexp(1.0f, -89), &bad) == 0);
  EXPECT_TRUE(float_to_fixed(3 * std::ldexp(1.0f, -89), &bad) == 2);
  EXPECT_TRUE(float_to_fixed(-3 * std::ldexp(1.0f, -89), &bad) == -2);
  EXPECT_TRUE(float_to_fixed(std::ldexp(1.0f, -120), &bad) == 0);
  EXPECT_FALSE(bad);
}

TEST(FixedPoint, FlagsNonFiniteAndOutOfRange) {
  for (float x : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN(), std::ldexp(1.0f, kGradMaxExp),
                  -std::ldexp(1.0f, 40)}) {
    bool bad = false;
    float_to_fixed(x, &bad);
    EXPECT_TRUE(bad) << x;
  }
  bool bad = false;
  float_to_fixed(std::nextafter(std::ldexp(1.0f, kGradMaxExp), 0.0f), &bad);
  EXPECT_FALSE(bad);
  std::vector<uint64_t> lo(3, 0), hi(3, 0);
  std::vector<float> x = {1.0f, std::numeric_limits<float>::infinity(), 2.0f};
  EXPECT_TRUE(accumulate_fixed(lo.data(), hi.data(), x.data(), 3));
  x[1] = 3.0f;
  EXPECT_FALSE(convert_fixed(lo.data(), hi.data(), x.data(), 3));
}

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

TEST(FixedPoint, SumIsIndependentOfPartitionAndOrder) {
  // 24 "micro-batch gradients" of 1000 elements with wildly different magnitudes.
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int M = 24, n = 1000;
  std::vector<std::vector<float>> g(M, std::vector<float>(n));
  for (auto& v : g)
    for (auto& x : v) x = std::ldexp(nd(rng), int(rng() % 40) - 30);
  auto reduce = [&](int world, std::vector<int> order) {
    // Each "rank" sums its micro-batches (order-permuted), then ranks are summed.
    std::vector<std::vector<uint64_t>> lo(world, std::vector<uint64_t>(n, 0)), hi = lo;
    for (size_t k = 0; k < order.size(); ++k)
      accumulate_fixed(lo[k % world].data(), hi[k % world].data(), g[order[k]].data(), n);
    for (int r = world - 1; r >= 1; --r)
      add_fixed(lo[0].data(), hi[0].data(), lo[r].data(), hi[r].data(), n);
    std::vector<float> out(n);
    fixed_to_floats(out.data(), lo[0].data(), hi[0].data(), n);
    return out;
  };
  std::vector<int> ord(M);
  for (int i = 0; i < M; ++i) ord[i] = i;
  const std::vector<float> ref = reduce(1, ord);
  for (int world : {2, 3, 4, 6}) {
    std::shuffle(ord.begin(), ord.end(), rng);
    EXPECT_EQ(0, std::memcmp(ref.data(), reduce(world, ord).data(), n * 4)) << world;
  }
  // And the result is the correctly rounded exact sum (long double holds these sums exactly
  // enough to compare after rounding to float for most elements).
  int exact = 0;
  for (int i = 0; i < n; ++i) {
    long double s = 0;
    for (int k = 0; k < M; ++k) s += g[k][i];
    exact += float(s) == ref[i];
  }
  EXPECT_GT(exact, n * 99 / 100);
}
