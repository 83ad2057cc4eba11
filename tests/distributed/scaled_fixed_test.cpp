// The exact reduction's number format (distributed/scaled_fixed.h): the vector kernels against
// the slow references under every ISA this CPU runs, and the properties the reduction rests on,
// checked over random global batches and random partitions into W = 1..8 simulated ranks:
// the same bits for every partition, order and thread count; an overflow decided alike for
// every partition and answered by a redo that gives the 1-rank bits; the documented error bound
// against the exact (long double) sum.
#include "distributed/scaled_fixed.h"

#include "core/cpu.h"
#include "distributed/communicator.h"
#include "distributed/zero.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

using namespace olmo::dist;

namespace {

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// The ISAs this CPU can run, each announced; the ones it cannot are printed as not run.
std::vector<olmo::Isa> runnable_isas() {
  static bool told = false;
  std::vector<olmo::Isa> out;
  for (olmo::Isa isa : {olmo::Isa::scalar, olmo::Isa::avx2, olmo::Isa::avx512}) {
    if (int(isa) > int(olmo::detected_isa())) {
      if (!told)
        std::printf("NOT RUN here: the %s copy (this CPU lacks it)\n",
                  isa == olmo::Isa::avx512 ? "AVX-512" : "AVX2");
      continue;
    }
    out.push_back(isa);
  }
  told = true;
  return out;
}

// A global batch: M micro-batch gradients over P elements cut into segments of very different
// magnitudes (one segment mostly zero rows, as the input embedding's gradient is).
struct Batch {
  std::vector<size_t> bounds;
  std::vector<std::vector<float>> g;  // [M][P]
};

Batch random_batch(std::mt19937& rng, size_t P, int M) {
  Batch b;
  b.bounds = {0};
  std::uniform_int_distribution<size_t> len(1, P / 3);
  while (b.bounds.back() < P) b.bounds.push_back(std::min(P, b.bounds.back() + len(rng)));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> mag(-40, 4);
  std::vector<int> seg_mag(b.bounds.size() - 1);
  for (int& m : seg_mag) m = mag(rng);
  b.g.assign(size_t(M), std::vector<float>(P, 0.0f));
  for (int k = 0; k < M; ++k)
    for (size_t s = 0; s + 1 < b.bounds.size(); ++s)
      for (size_t i = b.bounds[s]; i < b.bounds[s + 1]; ++i) {
        if (s == 0 && (i / 16) % 5 != size_t(k) % 5) continue;  // sparse rows
        // values spread over ~2^-20 .. 2^4 of the segment's magnitude
        b.g[size_t(k)][i] = std::ldexp(nd(rng), seg_mag[s] - int(rng() % 24));
      }
  return b;
}

// The exponent state a previous step would leave: each segment's largest exponent.
std::vector<int64_t> exponents_of(const Batch& b) {
  std::vector<int64_t> e(b.bounds.size() - 1, 0);
  for (const auto& g : b.g)
    for (size_t s = 0; s + 1 < b.bounds.size(); ++s)
      for (size_t i = b.bounds[s]; i < b.bounds[s + 1]; ++i) {
        uint32_t u;
        std::memcpy(&u, &g[i], 4);
        e[s] = std::max<int64_t>(e[s], (u >> 23) & 0xff);
      }
  return e;
}

struct Result {
  std::vector<float> out;
  // Each simulated rank's own conversion flags: never combined here (the job's decision is
  // GradReducer::agree_scales' max-reduce, run across real ranks by dist_grad_overflow).
  std::vector<uint32_t> rank_flags;
  std::vector<std::vector<int>> micro_of_rank;  // the micro-batches dealt to each rank
  std::vector<int64_t> seen;
  bool no_flags() const {
    return std::all_of(rank_flags.begin(), rank_flags.end(), [](uint32_t f) { return f == 0; });
  }
};

// Whether micro-batch g has an element at or beyond its segment's limit under sc (the
// definition of an overflow, scaled_fixed.h), from the float bits alone.
bool outgrows(const std::vector<float>& g, const std::vector<size_t>& bounds,
              const SegmentScales& sc) {
  for (size_t s = 0; s + 1 < bounds.size(); ++s)
    for (size_t i = bounds[s]; i < bounds[s + 1]; ++i) {
      uint32_t u;
      std::memcpy(&u, &g[i], 4);
      if (((u >> 23) & 0xff) >= sc.limit(s)) return true;
    }
  return false;
}

// W simulated ranks: micro-batches dealt to ranks at random (some ranks may get none), each
// rank converts its first and accumulates the rest in a random order, the rank accumulators
// are summed in a random order (any reduction tree), then one rounding to float.
Result reduce_partitioned(const Batch& b, const SegmentScales& sc, int W, std::mt19937& rng) {
  const size_t P = b.bounds.back();
  const int M = int(b.g.size());
  std::vector<std::vector<int>> mine(static_cast<size_t>(W));
  std::vector<int> order(static_cast<size_t>(M));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  for (int k : order) mine[rng() % size_t(W)].push_back(k);
  Result r;
  r.seen.assign(sc.segments(), 0);
  r.rank_flags.assign(size_t(W), 0);
  r.micro_of_rank = mine;
  std::vector<std::vector<int64_t>> acc(size_t(W), std::vector<int64_t>(P, 0));
  for (int w = 0; w < W; ++w) {
    omp_set_num_threads(1 + int(rng() % 3));
    bool first = true;
    for (int k : mine[size_t(w)]) {
      std::vector<int64_t> seen(sc.segments(), 0);
      r.rank_flags[size_t(w)] |= sc.convert(acc[size_t(w)].data(), b.g[size_t(k)].data(), 0, P, !first, seen);
      for (size_t s = 0; s < seen.size(); ++s) r.seen[s] = std::max(r.seen[s], seen[s]);
      first = false;
    }
  }
  std::vector<int> ranks(static_cast<size_t>(W));
  std::iota(ranks.begin(), ranks.end(), 0);
  std::shuffle(ranks.begin(), ranks.end(), rng);
  std::vector<int64_t> total(P, 0);
  for (int w : ranks) add_int64(total.data(), acc[size_t(w)].data(), P);
  r.out.assign(P, 0.0f);
  sc.to_float(r.out.data(), total.data(), 0, P);
  omp_set_num_threads(2);
  return r;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

// What the references say converting x with (shift, limit) gives: the ORed flags, the largest
// finite biased exponent, and per element the integer (unspecified where flagged[i]).
struct Reference {
  std::vector<int64_t> q;
  std::vector<char> flagged;
  uint32_t flags = 0;
  int64_t seen = 0;
};

Reference reference_of(const std::vector<float>& x, int32_t shift, uint32_t limit) {
  Reference r;
  r.q.resize(x.size());
  r.flagged.resize(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    uint32_t f = 0, u;
    r.q[i] = quantise_reference(x[i], shift, limit, &f);
    r.flags |= f;
    r.flagged[i] = f != 0;
    std::memcpy(&u, &x[i], 4);
    if (((u >> 23) & 0xff) != 255) r.seen = std::max<int64_t>(r.seen, (u >> 23) & 0xff);
  }
  return r;
}

}  // namespace

TEST(ScaledFixed, ValueBitsLeaveRoomForEveryMicroBatch) {
  EXPECT_EQ(value_bits(1), 62);
  EXPECT_EQ(value_bits(2), 61);
  EXPECT_EQ(value_bits(3), 60);
  EXPECT_EQ(value_bits(1024), 52);
  EXPECT_EQ(value_bits(1025), 51);
}

TEST(ScaledFixed, KernelsEqualTheReferencesUnderEveryIsa) {
  std::mt19937 rng(11);
  const size_t n = 50021;
  std::vector<float> x(n);
  for (auto& v : x) v = from_bits(rng());  // every exponent, NaN and inf included
  for (size_t i = 0; i < n; i += 97) x[i] = 0.0f;
  for (olmo::Isa isa : runnable_isas()) {
    olmo::set_isa_override(isa);
    for (uint32_t limit : {1u, 60u, 127u, 150u, 200u, 255u}) {
      const SegmentScales probe({0, n}, 7);
      const int32_t shift = int32_t(probe.value_bits() + 127 - int(limit));
      // Through SegmentScales: one segment whose state gives this limit.
      SegmentScales sc({0, n}, 7);
      sc.begin_step(7);
      if (limit >= 1 + kHeadroom && limit < 255) sc.set_exponents({int64_t(limit) - kHeadroom - 1});
      else continue;
      ASSERT_EQ(sc.limit(0), limit);
      ASSERT_EQ(sc.shift(0), shift);
      std::vector<int64_t> q(n, 0), seen(1, 0);
      const uint32_t flags = sc.convert(q.data(), x.data(), 0, n, false, seen);
      const Reference want = reference_of(x, shift, limit);
      for (size_t i = 0; i < n; ++i) {
        if (want.flagged[i]) continue;  // the value of a flagged element is unspecified
        ASSERT_EQ(q[i], want.q[i]) << "isa " << int(isa) << " limit " << limit << " x=" << x[i];
        const float back = dequantise_reference(q[i], shift);
        float fast = 0;
        sc.to_float(&fast, &q[i], i, i + 1);
        if (std::fabs(back) >= 0x1p-126f) {
          ASSERT_EQ(fast, back) << q[i];
        }
      }
      EXPECT_EQ(flags, want.flags) << "limit " << limit;
      EXPECT_EQ(seen[0], want.seen);
      // Accumulating twice = 2q exactly (no flagged element at limit 255 is finite).
      if (limit == 200) {
        std::vector<float> small(n);
        for (size_t i = 0; i < n; ++i) small[i] = std::isfinite(x[i]) && std::fabs(x[i]) < 1e10f ? x[i] : 1.0f;
        std::vector<int64_t> a(n, 0), s1(1, 0);
        ASSERT_EQ(sc.convert(a.data(), small.data(), 0, n, false, s1), 0u);
        ASSERT_EQ(sc.convert(a.data(), small.data(), 0, n, true, s1), 0u);
        for (size_t i = 0; i < n; ++i) {
          uint32_t f = 0;
          ASSERT_EQ(a[i], 2 * quantise_reference(small[i], shift, limit, &f));
        }
      }
    }
  }
  olmo::clear_isa_override();
}

// The values where a rounding shortcut would go wrong, under every ISA against the reference:
// ties (k + 1/2) of both signs and both parities, y = x * 2^shift near 2^22..2^24 (the last
// float ulps with a half), 2^52, 2^53, 2^61 and the largest accepted |y| (< 2^L), the smallest
// values that overflow, denormal floats, +-0, FLT_MIN, at limits from the smallest (shift 185)
// to 254 (shift < 0: most values round to 0 or a tie), every lane position of a vector.
TEST(ScaledFixed, EdgeValuesRoundAsTheReferenceUnderEveryIsa) {
  std::vector<double> ys;  // targets in units of 2^-shift (the float nearest is taken)
  for (double k : {0.5, 1.5, 2.5, 3.5, 4.5, 1023.5, 1024.5, 0.25, 0.75, 1.25, 0.499999, 0.500001})
    ys.push_back(k);
  for (double t : {0x1p22 - 0.5, 0x1p22 + 0.5, 0x1p23 - 0.5, 0x1p23 - 1.5, 0x1p24 - 1.0,
                   0x1p24 - 3.0, 0x1p24 + 2.0})
    ys.push_back(t);
  for (int k : {31, 32, 33, 51, 52, 53, 54, 60, 61})
    for (double m : {1.0, 1.0 - 0x1p-24, 1.0 + 0x1p-23, 1.5})
      ys.push_back(std::ldexp(m, k));
  for (int lim : {0, 1, 2}) ys.push_back(std::ldexp(1.0 - 0x1p-24, 62 - lim));  // below 2^L
  std::vector<float> base;
  for (uint32_t b : {0x00000001u, 0x00000002u, 0x00000003u, 0x007fffffu, 0x00400000u,
                     0x00800000u, 0x00800001u, 0x7f7fffffu})
    base.push_back(from_bits(b));
  base.push_back(0.0f);
  base.push_back(-0.0f);
  for (olmo::Isa isa : runnable_isas()) {
    olmo::set_isa_override(isa);
    for (uint32_t limit : {4u, 30u, 100u, 127u, 150u, 189u, 200u, 240u, 254u}) {
      SegmentScales sc({0, 1}, 1);  // one micro-batch: L = 62, accepted |y| < 2^62
      sc.begin_step(1);
      sc.set_exponents({int64_t(limit) - kHeadroom - 1});
      ASSERT_EQ(sc.value_bits(), 62);
      const int32_t shift = sc.shift(0);
      std::vector<float> x = base;
      for (double y : ys) {
        const float f = float(std::ldexp(y, -shift));
        if (f != 0.0f && std::isfinite(f)) x.push_back(f);
      }
      const float at_limit = std::ldexp(1.0f, int(limit) - 127);  // the first that overflows
      x.push_back(at_limit);
      x.push_back(std::nextafter(at_limit, 0.0f));  // the largest accepted
      const size_t m = x.size();
      for (size_t i = 0; i < m; ++i) x.push_back(-x[i]);
      // Every value at every lane position: the list again from 7 more offsets.
      const std::vector<float> once = x;
      for (size_t r = 1; r < 8; ++r) x.insert(x.end(), once.begin() + long(r), once.end());
      const size_t n = x.size();
      SegmentScales wide({0, n}, 1);
      wide.begin_step(1);
      wide.set_exponents(sc.exponents());
      std::vector<int64_t> q(n, 0), seen(1, 0);
      const uint32_t flags = wide.convert(q.data(), x.data(), 0, n, false, seen);
      const Reference want = reference_of(x, shift, limit);
      int64_t checked = 0;
      for (size_t i = 0; i < n; ++i) {
        if (want.flagged[i]) continue;  // the value of a flagged element is unspecified
        ++checked;
        ASSERT_EQ(q[i], want.q[i]) << olmo::isa_name(isa) << " limit " << limit << " shift "
                                   << shift << " x=" << x[i] << " y="
                                   << std::ldexp(double(x[i]), shift);
      }
      EXPECT_EQ(flags, want.flags) << "limit " << limit;
      EXPECT_EQ(seen[0], want.seen) << "limit " << limit;
      EXPECT_GT(checked, int64_t(n / 4)) << "limit " << limit;
    }
  }
  olmo::clear_isa_override();
}

// k gradients in one pass (SegmentScales::convert_sum) against k conversions one after the other
// (convert), under every ISA: the same accumulator bits (store and add), the same rounding
// (round_out: acc unwritten), the same flags (an overflowing segment under stale scales) and
// exponents, the clear of the last source only, k = 0 (a store writes zeros), over ranges cut
// mid-segment and odd lengths; the sources' zero vectors differ (segment 0's sparse rows).
TEST(ScaledFixed, ConvertSumOfSourcesEqualsOneConversionEachUnderEveryIsa) {
  std::mt19937 rng(31);
  const int M = 5;
  const Batch b = random_batch(rng, 9001, M);
  const size_t P = b.bounds.back();
  SegmentScales fresh(b.bounds, M), stale(b.bounds, M);
  fresh.set_exponents(exponents_of(b));
  std::vector<int64_t> low = exponents_of(b);
  low[1] = std::max<int64_t>(1, low[1] - 5);  // segment 1 outgrows these
  stale.set_exponents(low);
  int overflowed = 0;
  for (olmo::Isa isa : runnable_isas()) {
    olmo::set_isa_override(isa);
    for (const SegmentScales* sc : {&fresh, &stale})
      for (size_t k : {size_t(0), size_t(1), size_t(2), size_t(M)})
        for (const auto& [a, e] : {std::pair<size_t, size_t>{0, P}, {37, P - 101}, {3, 4}})
          for (int mode = 0; mode < 4; ++mode) {
            const bool add = mode & 1, round = mode & 2;
            const size_t n = e - a;
            const std::string what = std::string(olmo::isa_name(isa)) + " k " +
                                     std::to_string(k) + " range " + std::to_string(a) +
                                     " mode " + std::to_string(mode);
            // One at a time: the first conversion stores unless add; k = 0 stores zeros.
            std::vector<int64_t> acc(n, 7), seen(sc->segments(), 0);
            uint32_t flags = 0;
            if (k == 0 && !add) std::fill(acc.begin(), acc.end(), 0);
            for (size_t j = 0; j < k; ++j)
              flags |= sc->convert(acc.data(), b.g[j].data() + a, a, e, add || j > 0, seen);
            std::vector<float> want(n);
            sc->to_float(want.data(), acc.data(), a, e);
            // One pass, the last source a copy that it clears.
            std::vector<float> last = k ? std::vector<float>(b.g[k - 1].begin() + long(a),
                                                             b.g[k - 1].begin() + long(e))
                                        : std::vector<float>();
            std::vector<const float*> xs;
            for (size_t j = 0; j + 1 < k; ++j) xs.push_back(b.g[j].data() + a);
            if (k) xs.push_back(last.data());
            std::vector<int64_t> sum(n, 7), sseen(sc->segments(), 0);
            std::vector<float> got(n, -1.0f);
            const uint32_t sflags =
                sc->convert_sum(sum.data(), xs.data(), k, a, e, add, sseen,
                                k ? last.data() : nullptr, round ? got.data() : nullptr);
            ASSERT_EQ(sflags, flags) << what;
            overflowed += (flags & kOverflow) != 0;
            ASSERT_EQ(sseen, seen) << what;
            if (round) {
              ASSERT_EQ(sum, std::vector<int64_t>(n, 7)) << what << ": acc written";
              ASSERT_TRUE(same_bits(got, want)) << what;
            } else {
              ASSERT_EQ(sum, acc) << what;
            }
            for (float v : last) ASSERT_EQ(v, 0.0f) << what << ": not cleared";
          }
  }
  olmo::clear_isa_override();
  EXPECT_GT(overflowed, 0) << "the stale scales never overflowed";
}

// The fusions of convert (clear: x zeroed as read; round_out: the new sum rounded instead of
// stored) against the unfused path (convert, then to_float, then a clear), under every ISA,
// over segments with zero vectors, odd lengths (vector tails) and ranges cut mid-segment.
TEST(ScaledFixed, FusedClearAndRoundingGiveTheUnfusedBitsUnderEveryIsa) {
  std::mt19937 rng(5);
  const int M = 3;
  const Batch b = random_batch(rng, 20011, M);
  const size_t P = b.bounds.back();
  SegmentScales sc(b.bounds, M);
  sc.set_exponents(exponents_of(b));
  for (olmo::Isa isa : runnable_isas()) {
    olmo::set_isa_override(isa);
    for (const auto& [a, e] : {std::pair<size_t, size_t>{0, P}, {37, P - 101}, {1, 2}}) {
      const size_t n = e - a;
      // Unfused: M conversions into acc, then to_float.
      std::vector<int64_t> acc(n, 7), seen(sc.segments(), 0);
      for (int k = 0; k < M; ++k)
        ASSERT_EQ(sc.convert(acc.data(), b.g[size_t(k)].data() + a, a, e, k > 0, seen), 0u);
      std::vector<float> want(n);
      sc.to_float(want.data(), acc.data(), a, e);
      // Fused: every micro-batch clears its copy; the last one rounds instead of storing.
      // (ref: the unfused sum after the same micro-batches.)
      std::vector<int64_t> facc(n, 7), fseen(sc.segments(), 0), ref(n, 7), rseen = fseen;
      std::vector<float> got(n, -1.0f);
      for (int k = 0; k < M; ++k) {
        std::vector<float> x(b.g[size_t(k)].begin() + long(a), b.g[size_t(k)].begin() + long(e));
        const bool last = k == M - 1;
        const std::vector<int64_t> before = facc;
        ASSERT_EQ(sc.convert(facc.data(), x.data(), a, e, k > 0, fseen, x.data(),
                             last ? got.data() : nullptr), 0u);
        ASSERT_EQ(sc.convert(ref.data(), b.g[size_t(k)].data() + a, a, e, k > 0, rseen), 0u);
        for (size_t i = 0; i < n; ++i) ASSERT_EQ(x[i], 0.0f) << "not cleared at " << i;
        if (last) {
          ASSERT_EQ(facc, before) << "round_out must leave acc unwritten";
        } else {
          ASSERT_EQ(facc, ref) << "micro-batch " << k;
        }
      }
      ASSERT_EQ(fseen, seen);
      ASSERT_TRUE(same_bits(got, want)) << "isa " << int(isa) << " range " << a << ".." << e;
      // One micro-batch (store + round): to_float of its own conversion.
      std::vector<int64_t> one(n, 0), s1(sc.segments(), 0), s2(sc.segments(), 0);
      ASSERT_EQ(sc.convert(one.data(), b.g[0].data() + a, a, e, false, s1), 0u);
      std::vector<float> want1(n), got1(n, -1.0f);
      sc.to_float(want1.data(), one.data(), a, e);
      std::vector<int64_t> untouched(n, 0);
      ASSERT_EQ(sc.convert(untouched.data(), b.g[0].data() + a, a, e, false, s2, nullptr,
                           got1.data()), 0u);
      ASSERT_TRUE(same_bits(got1, want1));
    }
  }
  olmo::clear_isa_override();
}

TEST(ScaledFixed, EveryPartitionOfEveryRandomBatchGivesTheSameBits) {
  std::mt19937 rng(2024);
  for (int trial = 0; trial < 12; ++trial) {
    const size_t P = 3000 + rng() % 5000;
    const int M = 1 + int(rng() % 12);
    const Batch b = random_batch(rng, P, M);
    SegmentScales sc(b.bounds, M);
    sc.set_exponents(exponents_of(b));
    std::vector<olmo::Isa> isas = runnable_isas();
    olmo::set_isa_override(isas.front());
    const Result one = reduce_partitioned(b, sc, 1, rng);
    ASSERT_TRUE(one.no_flags());
    for (int W = 1; W <= 8; ++W)
      for (int rep = 0; rep < 3; ++rep) {
        olmo::set_isa_override(isas[rng() % isas.size()]);
        const Result r = reduce_partitioned(b, sc, W, rng);
        ASSERT_TRUE(r.no_flags());
        ASSERT_TRUE(same_bits(r.out, one.out)) << "trial " << trial << " W " << W;
        ASSERT_EQ(r.seen, one.seen);
      }
  }
  olmo::clear_isa_override();
}

TEST(ScaledFixed, ForcedOverflowIsFlaggedByItsOwnRanksAndTheRedoGivesTheOneRankBits) {
  std::mt19937 rng(77);
  const size_t P = 4000;
  const int M = 9;
  Batch b = random_batch(rng, P, M);
  const std::vector<int64_t> right = exponents_of(b);
  // The scales a previous step with 2^5 smaller gradients in segment 1 would leave.
  std::vector<int64_t> stale = right;
  stale[1] = std::max<int64_t>(1, stale[1] - 5);
  SegmentScales fresh(b.bounds, M), old(b.bounds, M);
  fresh.set_exponents(right);
  old.set_exponents(stale);
  const Result want = reduce_partitioned(b, fresh, 1, rng);
  ASSERT_TRUE(want.no_flags());
  int rank_local = 0;  // W at which some rank saw the overflow and another did not
  for (int W = 1; W <= 8; ++W) {
    const Result r = reduce_partitioned(b, old, W, rng);
    // Each rank flags exactly when one of its own micro-batches outgrew the stale scales.
    int flagged = 0;
    for (int w = 0; w < W; ++w) {
      bool want = false;
      for (int k : r.micro_of_rank[size_t(w)]) want = want || outgrows(b.g[size_t(k)], b.bounds, old);
      ASSERT_EQ((r.rank_flags[size_t(w)] & kOverflow) != 0, want) << "W " << W << " rank " << w;
      flagged += want;
    }
    ASSERT_GE(flagged, 1) << "W " << W;  // the overflow is seen somewhere at every W
    if (flagged < W) ++rank_local;
    // The redo's scales come from the exponents every rank max-reduced: the same at every W.
    ASSERT_EQ(r.seen, right);
    SegmentScales redo(b.bounds, M);
    redo.set_exponents(r.seen);
    const Result again = reduce_partitioned(b, redo, W, rng);
    ASSERT_TRUE(again.no_flags());
    ASSERT_TRUE(same_bits(again.out, want.out)) << "W " << W;
  }
  EXPECT_GT(rank_local, 0) << "no W dealt the outgrown micro-batches to only some ranks";
}

TEST(ScaledFixed, TheSumIsWithinTheDocumentedBoundOfTheExactSum) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 6; ++trial) {
    const size_t P = 6000;
    const int M = 1 + int(rng() % 16);
    const Batch b = random_batch(rng, P, M);
    SegmentScales sc(b.bounds, M);
    sc.set_exponents(exponents_of(b));
    const Result r = reduce_partitioned(b, sc, 3, rng);
    for (size_t s = 0; s + 1 < b.bounds.size(); ++s) {
      const long double unit = std::ldexp(1.0L, -sc.shift(s));
      for (size_t i = b.bounds[s]; i < b.bounds[s + 1]; ++i) {
        long double exact = 0;
        for (const auto& g : b.g) exact += g[i];
        const long double got = r.out[i];
        // M half units from the conversions, half an fp32 ulp (plus 2^-53) from the rounding.
        const long double ulp = exact == 0 ? 0 : std::ldexp(1.0L, std::ilogb(double(exact)) - 23);
        const long double bound = M * unit / 2 + ulp / 2 * (1 + 0x1p-29L) + 1e-45L;
        ASSERT_LE(std::fabs(got - exact), bound) << "segment " << s << " element " << i;
      }
    }
  }
}

// One process, exact local accumulator: the first step knows no scale (measures, redo), the
// second fits; a step whose gradients grow 2^6 over the last one redoes once, and its result
// equals the simulation with the right scales. fused: add_micro_batch clears each micro-batch's
// gradient buffer and rounds the last one's sum into the shard (DataParallel's way).
void redo_scenario(bool fused) {
  auto comm = make_local_communicator();
  std::mt19937 rng(3);
  const size_t P = 5000;
  Batch b = random_batch(rng, P, 4);
  GradReducer red(*comm, P, ReduceMode::exact, 1 << 20, true, b.bounds);
  std::vector<float> shard(P);
  auto add_all = [&](const Batch& bb) {
    for (size_t k = 0; k < bb.g.size(); ++k) {
      if (!fused) {
        red.add_micro_batch(bb.g[k].data());
        continue;
      }
      std::vector<float> g = bb.g[k];
      const bool last = k + 1 == bb.g.size();
      EXPECT_EQ(red.add_micro_batch(g.data(), last ? nullptr : g.data(),
                                    last ? shard.data() : nullptr), !last);
      if (!last) {
        EXPECT_EQ(std::count(g.begin(), g.end(), 0.0f), long(P)) << "not cleared";
      }
    }
  };
  auto step = [&](const Batch& bb) {
    int passes = 0;
    for (;;) {
      ++passes;
      red.begin_step(4);
      add_all(bb);
      EXPECT_FALSE(red.finish(nullptr, shard.data()));
      if (!red.redo()) return passes;
    }
  };
  EXPECT_EQ(step(b), 2);  // measured, then redone
  EXPECT_EQ(red.scales().exponents(), exponents_of(b));
  EXPECT_EQ(step(b), 1);
  Batch big = b;
  for (auto& g : big.g)
    for (float& v : g) v = std::ldexp(v, 6);
  EXPECT_EQ(step(big), 2);
  SegmentScales sc(big.bounds, 4);
  sc.set_exponents(exponents_of(big));
  const Result want = reduce_partitioned(big, sc, 1, rng);
  EXPECT_TRUE(same_bits(shard, want.out));
  // Gradients 2^-3 of the last step's: no redo, rounded with the scales they were converted
  // with (the next step's, one binade lower, take effect only after).
  Batch small = b;
  for (auto& g : small.g)
    for (float& v : g) v = std::ldexp(v, 3);
  const std::vector<int64_t> before = red.scales().exponents();
  EXPECT_EQ(step(small), 1);
  SegmentScales then(small.bounds, 4);
  then.set_exponents(before);
  EXPECT_TRUE(same_bits(shard, reduce_partitioned(small, then, 1, rng).out));
  for (size_t s = 0; s < before.size(); ++s)
    EXPECT_EQ(red.scales().exponents()[s], std::max(before[s] - 1, exponents_of(small)[s]));
  // A NaN is a non-finite step (skipped by the trainer), never a redo.
  big.g[2][17] = std::nanf("");
  red.begin_step(4);
  add_all(big);
  EXPECT_TRUE(red.finish(nullptr, shard.data()));
  EXPECT_FALSE(red.redo());
}

TEST(ScaledFixed, GradReducerRedoesAnOverflowedStepWithRaisedScales) { redo_scenario(false); }

TEST(ScaledFixed, GradReducerFusedClearAndRoundingKeepTheRedoAndTheBits) {
  redo_scenario(true);
}
