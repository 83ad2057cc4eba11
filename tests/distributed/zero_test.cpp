// ZeRO pieces that need no second process: the shard layout, the one-process GradReducer
// (exact and fast) against plain sums, its ZeRO-3 range API against the whole-vector one, its
// deferred micro-batches against one conversion each, the exact global norm against a long-double norm, and the
// sharded AdamW against the unsharded one, bit for bit.
#include "distributed/zero.h"
#include "distributed/exact_norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/error.h"
#include "optim/adamw.h"
#include "optim/grad_clip.h"

using namespace olmo;

TEST(ShardLayout, CoversTheVectorInRankOrder) {
  for (size_t n : {1ul, 15ul, 16ul, 100ul, 1001ul}) {
    for (size_t w : {1ul, 2ul, 3ul, 4ul, 7ul}) {
      dist::ShardLayout L(n, w);
      EXPECT_EQ(L.shard_len % 16, 0u);
      size_t at = 0;
      for (size_t r = 0; r < w; ++r) {
        EXPECT_EQ(L.begin(r), at);
        at = L.end(r);
      }
      EXPECT_EQ(at, n) << n << " " << w;
    }
  }
}

// One exact step through the reducer, redone while the scales overflow (a fresh reducer's
// first step measures them); returns finish()'s non-finite flag.
bool exact_step(dist::GradReducer& r, const std::vector<std::vector<float>>& mb, float* out) {
  for (int pass = 0; pass < 3; ++pass) {
    r.begin_step(int64_t(mb.size()));
    for (auto& v : mb) r.add_micro_batch(v.data());
    const bool bad = r.finish(nullptr, out);
    if (!r.redo()) return bad;
  }
  ADD_FAILURE() << "still overflowing after two redos";
  return true;
}

// The exact reduction's documented bound (distributed/scaled_fixed.h): M half units of the
// segment's scale from the conversions, half an fp32 ulp (plus 2^-53) from the rounding.
::testing::AssertionResult within_bound(float got, long double exact, size_t m, int32_t shift) {
  const long double ulp = exact == 0 ? 0 : std::ldexp(1.0L, std::ilogb(double(exact)) - 23);
  const long double bound = m * std::ldexp(1.0L, -shift) / 2 + ulp / 2 * (1 + 0x1p-29L) + 1e-45L;
  if (std::fabs(got - exact) <= bound) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << got << " vs exact " << double(exact) << ": off by "
                                       << double(std::fabs(got - exact)) << " > " << double(bound);
}

TEST(GradReducer, OneProcessExactAndFastEqualPlainSums) {
  auto comm = dist::make_local_communicator();
  const size_t n = 5003;
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0, 1e-3f);
  std::vector<std::vector<float>> mb(5, std::vector<float>(n));
  for (auto& v : mb)
    for (auto& x : v) x = nd(rng);
  // exact, with small buckets so that several are in flight
  dist::GradReducer ex(*comm, n, dist::ReduceMode::exact, 256);
  std::vector<float> out(ex.shard_len());
  ASSERT_FALSE(exact_step(ex, mb, out.data()));
  for (size_t i = 0; i < n; ++i) {
    long double s = 0;
    for (auto& v : mb) s += v[i];  // 5 terms: long double is exact
    ASSERT_TRUE(within_bound(out[i], s, mb.size(), ex.scales().shift(0))) << i;
  }
  // fast: the caller's fp32 accumulation is passed through
  dist::GradReducer fa(*comm, n, dist::ReduceMode::fast, 256);
  std::vector<float> acc(n, 0.0f), out2(n);
  for (auto& v : mb)
    for (size_t i = 0; i < n; ++i) acc[i] += v[i];
  fa.begin_step();
  ASSERT_FALSE(fa.finish(acc.data(), out2.data()));
  EXPECT_EQ(0, std::memcmp(acc.data(), out2.data(), n * 4));
  // a non-finite micro-batch gradient is reported
  mb[2][17] = std::nanf("");
  EXPECT_TRUE(exact_step(ex, mb, out.data()));
}

// ZeRO-3's range API on one process: micro-batch gradients added range by range (ranges in any
// order, several steps) give add_micro_batch's bits; gather_range copies the shard's range.
TEST(GradReducer, RangesGiveTheWholeVectorsBits) {
  auto comm = dist::make_local_communicator();
  const size_t n = 5003;
  const size_t cuts[] = {0, 7, 700, 701, 4000, n};  // ranges [cuts[i], cuts[i+1])
  std::mt19937 rng(2);
  std::normal_distribution<float> nd(0, 1e-3f);
  dist::GradReducer whole(*comm, n, dist::ReduceMode::exact, 256);
  dist::GradReducer parts(*comm, n, dist::ReduceMode::exact, 256);
  for (int step = 0; step < 2; ++step) {
    std::vector<std::vector<float>> mb(3, std::vector<float>(n));
    for (auto& v : mb)
      for (auto& x : v) x = nd(rng);
    std::vector<float> a(n), b(n);
    ASSERT_FALSE(exact_step(whole, mb, a.data()));
    for (int pass = 0;; ++pass) {  // the same redo rule through the range API
      ASSERT_LT(pass, 3);
      parts.begin_step(int64_t(mb.size()));
      for (auto& v : mb)
        for (int i = 4; i >= 0; --i) parts.add_range(v.data() + cuts[i], cuts[i], cuts[i + 1]);
      ASSERT_FALSE(parts.finish(nullptr, b.data()));
      if (!parts.redo()) break;
    }
    ASSERT_EQ(0, std::memcmp(a.data(), b.data(), n * 4)) << "step " << step;
  }
  std::vector<float> shard(n), got(300, -1.0f);
  for (size_t i = 0; i < n; ++i) shard[i] = float(i);
  parts.gather_range(shard.data(), 650, 950, got.data());
  for (size_t i = 0; i < 300; ++i) ASSERT_EQ(got[i], float(650 + i)) << i;
  EXPECT_THROW(parts.gather_range(shard.data(), 10, n + 1, got.data()), Error);
}

// Per-instance micro-batches of a row-sparse embedding: the local accumulator converts only the
// rows touch_rows named (when adding, not storing or rounding), with the bits of the whole pass
// (a reducer without sparse rows) and the same fused clear, step after step.
TEST(GradReducer, TouchedRowsOnlyGiveTheWholePassBits) {
  auto comm = dist::make_local_communicator();
  const size_t rows = 97, row_len = 16, head = 300, n = head + rows * row_len + 211;
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0, 1e-3f);
  dist::GradReducer whole(*comm, n, dist::ReduceMode::exact, 256);
  dist::GradReducer sparse(*comm, n, dist::ReduceMode::exact, 256);
  sparse.set_sparse_rows(head, rows, row_len);
  for (int step = 0; step < 3; ++step) {
    // 6 micro-batches of 5 token ids each (repeats and neighbours: runs of rows)
    std::vector<std::vector<int32_t>> ids(6);
    std::vector<std::vector<float>> mb(6, std::vector<float>(n, 0.0f));
    for (size_t k = 0; k < mb.size(); ++k) {
      for (int t = 0; t < 5; ++t) ids[k].push_back(int32_t(rng() % rows));
      ids[k].push_back(ids[k][0] + 1 < int32_t(rows) ? ids[k][0] + 1 : 0);
      for (size_t i = 0; i < head; ++i) mb[k][i] = nd(rng);
      for (int32_t id : ids[k])
        for (size_t j = 0; j < row_len; ++j) mb[k][head + size_t(id) * row_len + j] = nd(rng);
      for (size_t i = head + rows * row_len; i < n; ++i) mb[k][i] = nd(rng);
    }
    std::vector<float> a(n), b(n);
    ASSERT_FALSE(exact_step(whole, mb, a.data()));
    for (int pass = 0;; ++pass) {
      ASSERT_LT(pass, 3);
      sparse.begin_step(int64_t(mb.size()));
      for (size_t k = 0; k < mb.size(); ++k) {
        std::vector<float> g = mb[k];
        sparse.touch_rows(ids[k].data(), ids[k].size());
        const bool last = k + 1 == mb.size();
        ASSERT_TRUE(sparse.add_micro_batch(g.data(), g.data(), last ? b.data() : nullptr));
        for (size_t i = 0; i < n; ++i) ASSERT_EQ(g[i], 0.0f) << "not cleared: " << i;
      }
      ASSERT_FALSE(sparse.finish(nullptr, b.data()));
      if (!sparse.redo()) break;
    }
    ASSERT_EQ(0, std::memcmp(a.data(), b.data(), n * 4)) << "step " << step;
  }
}

// Deferred micro-batches (defer_micro_batch, DataParallel's kept copies): every micro-batch but
// the last converted with the last in one pass gives the one-at-a-time bits (rounded into the
// shard at one process, and through the accumulator with finish()'s rounding), the same redo
// decisions and next scales (a step whose gradients grew 2^6 redoes in both), while each kept
// copy holds garbage (NaN, 1e30) in the embedding rows its tokens did not touch: only the rows
// a micro-batch touched are read from it. skipped_rows counts every micro-batch's left-out rows.
TEST(GradReducer, DeferredMicroBatchesGiveTheOneAtATimeBits) {
  auto comm = dist::make_local_communicator();
  const size_t rows = 97, row_len = 16, head = 300, n = head + rows * row_len + 211;
  const std::vector<size_t> bounds = {0, 120, head, head + rows * row_len, n};
  std::mt19937 rng(8);
  std::normal_distribution<float> nd(0, 1e-3f);
  for (bool round_into : {true, false}) {
    dist::GradReducer one(*comm, n, dist::ReduceMode::exact, 256, true, bounds);
    dist::GradReducer defer(*comm, n, dist::ReduceMode::exact, 256, true, bounds);
    one.set_sparse_rows(head, rows, row_len);
    defer.set_sparse_rows(head, rows, row_len);
    for (int step = 0; step < 4; ++step) {
      const size_t M = step == 3 ? 1 : 2 + rng() % 5;  // step 3: nothing deferred
      std::vector<std::vector<int32_t>> ids(M);
      std::vector<std::vector<float>> mb(M, std::vector<float>(n, 0.0f)), kept(M);
      int64_t left_out = 0;
      for (size_t k = 0; k < M; ++k) {
        for (int t = 0; t < 5; ++t) ids[k].push_back(int32_t(rng() % rows));
        ids[k].push_back(ids[k][0] + 1 < int32_t(rows) ? ids[k][0] + 1 : 0);
        std::vector<uint8_t> mine(rows, 0);
        for (int32_t id : ids[k]) mine[size_t(id)] = 1;
        const float grow = step == 2 ? 64.0f : 1.0f;
        for (size_t i = 0; i < n; ++i) {
          const bool emb = i >= head && i < head + rows * row_len;
          if (!emb || mine[(i - head) / row_len]) mb[k][i] = grow * nd(rng);
        }
        kept[k] = mb[k];
        for (size_t r = 0; r < rows; ++r) {
          left_out += !mine[r];
          if (!mine[r])
            for (size_t j = 0; j < row_len; ++j)
              kept[k][head + r * row_len + j] = j % 2 ? std::nanf("") : 1e30f;
        }
      }
      std::vector<float> a(n), b(n);
      int passes_one = 0, passes_defer = 0;
      for (bool redo = true; redo; redo = one.redo()) {
        ASSERT_LT(passes_one++, 3);
        one.begin_step(int64_t(M));
        for (size_t k = 0; k < M; ++k) {
          std::vector<float> g = mb[k];
          one.touch_rows(ids[k].data(), ids[k].size());
          const bool last = k + 1 == M;
          one.add_micro_batch(g.data(), g.data(), last && round_into ? a.data() : nullptr);
        }
        ASSERT_FALSE(one.finish(nullptr, a.data()));
      }
      for (bool redo = true; redo; redo = defer.redo()) {
        ASSERT_LT(passes_defer++, 3);
        defer.begin_step(int64_t(M));
        for (size_t k = 0; k + 1 < M; ++k) {
          defer.touch_rows(ids[k].data(), ids[k].size());
          defer.defer_micro_batch(kept[k].data());
        }
        std::vector<float> g = mb[M - 1];
        defer.touch_rows(ids[M - 1].data(), ids[M - 1].size());
        defer.add_micro_batch(g.data(), nullptr, round_into ? b.data() : nullptr);
        ASSERT_FALSE(defer.finish(nullptr, b.data())) << "step " << step;
        if (M > 1) {
          EXPECT_EQ(defer.skipped_rows(), left_out) << "step " << step;
        }
      }
      EXPECT_EQ(passes_defer, passes_one) << "step " << step;
      EXPECT_EQ(defer.scales().exponents(), one.scales().exponents()) << "step " << step;
      ASSERT_EQ(0, std::memcmp(a.data(), b.data(), n * 4))
          << "step " << step << " M " << M << " round_into " << round_into;
    }
  }
}

// The local accumulator is overwritten by a step's first micro-batch (no clear in begin_step):
// a second step must not see the first's sums, also where its first micro-batch has all-zero
// vectors (which the accumulating kernel skips), and a step without micro-batches sums to 0.
TEST(GradReducer, ExactStepsDoNotCarryTheLastStepsSum) {
  auto comm = dist::make_local_communicator();
  const size_t n = 4099;
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0, 1e-2f);
  auto batch = [&](size_t k) {
    std::vector<std::vector<float>> mb(k, std::vector<float>(n));
    for (auto& v : mb)
      for (auto& x : v) x = nd(rng);
    return mb;
  };
  dist::GradReducer ex(*comm, n, dist::ReduceMode::exact, 512);
  std::vector<float> out(ex.shard_len());
  for (int step = 0; step < 3; ++step) {
    auto mb = batch(size_t(2 + step));
    if (step == 1)  // zero rows in the first micro-batch, as an untouched embedding row gives
      std::fill(mb[0].begin() + 64, mb[0].begin() + 3000, 0.0f);
    ASSERT_FALSE(exact_step(ex, mb, out.data()));
    for (size_t i = 0; i < n; ++i) {
      long double s = 0;
      for (auto& v : mb) s += v[i];
      ASSERT_TRUE(within_bound(out[i], s, mb.size(), ex.scales().shift(0)))
          << "step " << step << " element " << i;
    }
  }
  ex.begin_step();
  ASSERT_FALSE(ex.finish(nullptr, out.data()));
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], 0.0f) << i;
}

TEST(GradReducer, AutoAccumulatorIsShardedForLargeWorldsAndSingleMicroBatches) {
  EXPECT_TRUE(dist::local_accumulator("auto", 1, 1));
  EXPECT_TRUE(dist::local_accumulator("auto", 1, 512));
  EXPECT_TRUE(dist::local_accumulator("auto", 2, 2));
  EXPECT_TRUE(dist::local_accumulator("auto", dist::kLocalAccumulatorMaxWorld, 2));
  EXPECT_FALSE(dist::local_accumulator("auto", 2, 1));  // same traffic, 1/W the memory
  EXPECT_FALSE(dist::local_accumulator("auto", dist::kLocalAccumulatorMaxWorld + 1, 8));
  EXPECT_FALSE(dist::local_accumulator("auto", 64, 4));
  EXPECT_TRUE(dist::local_accumulator("local", 64, 4));
  EXPECT_FALSE(dist::local_accumulator("sharded", 2, 8));
  EXPECT_THROW(dist::local_accumulator("shard", 2, 8), Error);
}

TEST(GradReducer, ExactNormMatchesLongDoubleAndFastMatchesTotalGradNorm) {
  auto comm = dist::make_local_communicator();
  std::mt19937 rng(2);
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> g(70001);
  for (auto& x : g) x = std::ldexp(nd(rng), int(rng() % 30) - 20);
  long double s = 0;
  for (float x : g) s += (long double)x * x;
  dist::GradReducer ex(*comm, g.size(), dist::ReduceMode::exact, 1 << 20);
  const double ne = ex.global_norm(g.data(), g.size());
  EXPECT_NEAR(ne, double(std::sqrt(s)), 1e-12 * ne);
  dist::GradReducer fa(*comm, g.size(), dist::ReduceMode::fast, 1 << 20);
  EXPECT_EQ(float(fa.global_norm(g.data(), g.size())), optim::total_grad_norm(g.data(), g.size()));
  std::vector<float> z(100, 0.0f);
  EXPECT_EQ(ex.global_norm(z.data(), z.size()), 0.0);
  // Any partition (ranks' shards, threads) gives the same bins, so the same norm bits.
  dist::SquareBins whole{};
  dist::add_square_bins(g.data(), g.size(), whole);
  for (int trial = 0; trial < 5; ++trial) {
    dist::SquareBins parts{};
    for (size_t lo = 0; lo < g.size();) {
      const size_t len = std::min(g.size() - lo, size_t(1 + rng() % 40000));
      dist::add_square_bins(g.data() + lo, len, parts);
      lo += len;
    }
    EXPECT_EQ(dist::norm_from_bins(parts), dist::norm_from_bins(whole));
  }
  EXPECT_EQ(dist::norm_from_bins(whole), ne);
  g[7] = std::nanf("");
  EXPECT_TRUE(std::isinf(ex.global_norm(g.data(), g.size())));
}

TEST(AdamWShard, ShardedUpdatesEqualTheUnshardedOne) {
  const size_t n = 1000;
  std::vector<optim::ParamGroup> groups = {{0, 300, 0.0, "embeddings"}, {300, 700, 0.1, "default"}};
  std::mt19937 rng(4);
  std::normal_distribution<float> nd(0, 0.02f);
  std::vector<float> p0(n);
  for (auto& x : p0) x = nd(rng);
  std::vector<std::vector<float>> grads(3, std::vector<float>(n));
  for (auto& g : grads)
    for (auto& x : g) x = nd(rng);
  optim::AdamW full(n, groups);
  std::vector<float> pf = p0;
  for (auto& g : grads) full.step(pf.data(), g.data(), 1e-3);
  for (size_t w : {2ul, 3ul, 4ul}) {
    dist::ShardLayout L(n, w);
    std::vector<float> ps = p0;
    for (size_t r = 0; r < w; ++r) {
      optim::AdamW sh(n, groups, {}, L.begin(r), L.end(r));
      EXPECT_EQ(sh.state_bytes(), 2 * 4 * L.len(r));
      for (auto& g : grads) sh.step(ps.data() + L.begin(r), g.data() + L.begin(r), 1e-3);
      EXPECT_EQ(0, std::memcmp(sh.exp_avg(), full.exp_avg() + L.begin(r), L.len(r) * 4));
      EXPECT_EQ(sh.steps(), full.steps());
      EXPECT_EQ(sh.state_json(), full.state_json());  // global groups and step counts
    }
    EXPECT_EQ(0, std::memcmp(ps.data(), pf.data(), n * 4)) << w;
  }
}
