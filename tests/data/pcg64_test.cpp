// Known-answer tests of the numpy port (data/pcg64.h). Expected values were printed by numpy 2.4
// (SeedSequence(...).pool, generate_state(4, uint64), PCG64(34522).state / random_raw(4),
// Generator(PCG64(s)).shuffle(arange(n, uint32))); the full-size comparisons against numpy run in
// tests/data/numpy_order.py. Also checks next32's buffered halves and random_interval's range.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "data/pcg64.h"

using namespace olmo::data;

TEST(SeedSequence, PoolMatchesNumpy) {
  auto pool = [](u128 v) {
    SeedSequence s = SeedSequence::from_int(v);
    return std::vector<uint32_t>(s.pool(), s.pool() + 4);
  };
  EXPECT_EQ(pool(34522), (std::vector<uint32_t>{0x35ad7d2d, 0x05d0e80f, 0xe549d7bf, 0x0cc6d76c}));
  EXPECT_EQ(pool(0), (std::vector<uint32_t>{0xfe40eb07, 0x4f363a36, 0x4eb2009d, 0xc89a7aa7}));
  // Three words of entropy (> 64 bits), and four words.
  EXPECT_EQ(pool((u128(1) << 64) + 7),
            (std::vector<uint32_t>{0x96a298ac, 0x42d2101d, 0xa0928ab3, 0x06df7e8e}));
  EXPECT_EQ(pool((u128(1) << 100) + (u128(1) << 70) + 3),
            (std::vector<uint32_t>{0x4f2b25ac, 0x35e6695c, 0x48803ab2, 0x5415854d}));
}

TEST(SeedSequence, GenerateStateMatchesNumpy) {
  auto st = SeedSequence::from_int(34522).generate_state64(4);
  EXPECT_EQ(st, (std::vector<uint64_t>{0x3885fa2b0f7cdc0cULL, 0x35939b7abce1747bULL,
                                        0x51ebfab57a63dbe3ULL, 0x858410cd59b161dbULL}));
}

TEST(Pcg64, StateAndRawOutputMatchNumpy) {
  Pcg64 g = Pcg64::from_int(34522);
  u128 want_state = (u128(0xf48c2cacfaa3a7b1ULL) << 64) | 0xaa18090f599df531ULL;
  u128 want_inc = (u128(0xa3d7f56af4c7b7c7ULL) << 64) | 0x0b08219ab362c3b7ULL;
  EXPECT_TRUE(g.state() == want_state);
  EXPECT_TRUE(g.inc() == want_inc);
  const uint64_t raw[4] = {0xf4fbe23781d18313ULL, 0x43d3215968d035baULL, 0x14e0d1d8e68017b9ULL,
                           0x7710750ee80d4ce4ULL};
  for (uint64_t r : raw) EXPECT_EQ(g.next64(), r);
}

TEST(Pcg64, Next32IsLowThenHighHalf) {
  Pcg64 a = Pcg64::from_int(34522), b = Pcg64::from_int(34522);
  for (int i = 0; i < 8; ++i) {
    uint64_t r = b.next64();
    EXPECT_EQ(a.next32(), static_cast<uint32_t>(r));
    EXPECT_EQ(a.next32(), static_cast<uint32_t>(r >> 32));
  }
}

TEST(RandomInterval, StaysInRangeAndHitsEveryValue) {
  Pcg64 g = Pcg64::from_int(7);
  EXPECT_EQ(random_interval(g, 0), 0u);
  for (uint64_t max : {1ull, 2ull, 5ull, 8ull}) {
    std::vector<int> seen(max + 1, 0);
    for (int i = 0; i < 2000; ++i) {
      uint64_t v = random_interval(g, max);
      ASSERT_LE(v, max);
      seen[v]++;
    }
    for (int c : seen) EXPECT_GT(c, 0);
  }
  // > 32-bit bound takes the 64-bit path.
  for (int i = 0; i < 100; ++i) EXPECT_LE(random_interval(g, (1ull << 40) + 3), (1ull << 40) + 3);
}

TEST(Shuffle, SmallArraysMatchNumpy) {
  auto sh = [](int64_t n, uint64_t seed) {
    std::vector<uint32_t> x(n);
    std::iota(x.begin(), x.end(), 0u);
    Pcg64 g = Pcg64::from_int(seed);
    shuffle(g, x.data(), n);
    return x;
  };
  EXPECT_EQ(sh(1, 34522), (std::vector<uint32_t>{0}));
  EXPECT_EQ(sh(10, 34522), (std::vector<uint32_t>{5, 9, 8, 4, 0, 6, 1, 2, 7, 3}));
  EXPECT_EQ(sh(10, 1), (std::vector<uint32_t>{8, 4, 7, 0, 1, 2, 5, 9, 6, 3}));
  // global_order(n, seed, epoch) == shuffle with PCG64(seed + epoch).
  EXPECT_EQ(global_order(10, 34521, 1), sh(10, 34522));
  auto big = global_order(100000, 34521, 1);
  EXPECT_EQ(std::vector<uint32_t>(big.begin(), big.begin() + 5),
            (std::vector<uint32_t>{3905, 35708, 5676, 91286, 98684}));
  EXPECT_EQ(std::vector<uint32_t>(big.end() - 3, big.end()),
            (std::vector<uint32_t>{74073, 13754, 99091}));
  std::sort(big.begin(), big.end());
  for (uint32_t i = 0; i < big.size(); ++i) ASSERT_EQ(big[i], i);
}

TEST(GlobalOrder, NoShuffleAndBadArgs) {
  EXPECT_EQ(global_order(4, 1, 1, false), (std::vector<uint32_t>{0, 1, 2, 3}));
  EXPECT_TRUE(global_order(0, 1, 1).empty());
  EXPECT_THROW(global_order(4, 1, 0), olmo::Error);
  EXPECT_THROW(global_order(-1, 1, 1), olmo::Error);
}
