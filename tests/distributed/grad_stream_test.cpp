// The pieces of the gradient stream and of the row-sparse embedding path (dist::GradReducer),
// W = 2..4 ranks as threads (lib/thread_comm.h), each checked against a brute-force model:
//   - the touched-row union: every rank's union equals the OR of the rows each rank touched,
//     and skipped_rows() counts the rows outside it;
//   - travel(a, b, sparse): rank r's runs are exactly the elements of [a, b) in r's shard, in
//     order, without the embedding rows outside the union when sparse (all of them otherwise);
//   - a streamed step (begin_stream, stream_range per unit, finish): the sum of the ranks'
//     gradients on every shard, untouched rows zero; streamed_units() counts the units posted
//     and is 0 in the same step not streamed;
//   - deferred micro-batches (defer_micro_batch) joining the last one, streamed or not.
#include <gtest/gtest.h>

#include <omp.h>

#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "distributed/zero.h"
#include "lib/thread_comm.h"

namespace olmo::dist {
// The reducer's private pieces, for this test only (zero.h names it a friend).
struct GradReducerProbe {
  static std::vector<TravelRuns> travel(const GradReducer& g, size_t a, size_t b, bool sparse) {
    return g.travel(a, b, sparse);
  }
  static void unite(GradReducer& g) { g.unite_touched(); }
  static const std::vector<uint8_t>& union_rows(const GradReducer& g) { return g.union_; }
};
}  // namespace olmo::dist

using namespace olmo;
using dist::GradReducer;
using dist::GradReducerProbe;
using olmo::test_comm::Hub;
using olmo::test_comm::ThreadComm;

namespace {

// The vector: [0, kEmbed) dense, then kRows rows of kRowLen (the embedding), then dense again.
constexpr size_t kEmbed = 37, kRows = 50, kRowLen = 6, kNumel = kEmbed + kRows * kRowLen + 41;

// Runs f(rank) on W threads, each with its own ThreadComm; failures of a rank are reported by
// gtest from its thread (EXPECT_*).
template <class F>
void on_ranks(int W, F f) {
  Hub hub(W);
  std::vector<std::thread> th;
  for (int r = 0; r < W; ++r)
    th.emplace_back([&, r] {
      std::lock_guard<std::mutex> my_turn(hub.turn);
      omp_set_num_threads(1);
      ThreadComm comm(hub, r);
      f(comm, r);
    });
  for (auto& t : th) t.join();
}

// Each rank's touched rows: random, some ranks none.
std::vector<std::vector<int32_t>> random_ids(std::mt19937& rng, int W) {
  std::vector<std::vector<int32_t>> ids(static_cast<size_t>(W));
  for (auto& v : ids) {
    const size_t n = rng() % 4 == 0 ? 0 : rng() % 12;
    for (size_t i = 0; i < n; ++i) v.push_back(int32_t(rng() % kRows));
  }
  return ids;
}

std::vector<uint8_t> union_of(const std::vector<std::vector<int32_t>>& ids) {
  std::vector<uint8_t> u(kRows, 0);
  for (const auto& v : ids)
    for (int32_t id : v) u[size_t(id)] = 1;
  return u;
}

bool carried(size_t i, const std::vector<uint8_t>& u, bool sparse) {
  if (!sparse || i < kEmbed || i >= kEmbed + kRows * kRowLen) return true;
  return u[(i - kEmbed) / kRowLen] != 0;
}

// The model's units in reverse flat order (as the backward finishes them), the embedding one
// of them.
const std::vector<std::pair<size_t, size_t>> kUnits = {
    {kEmbed + kRows * kRowLen + 20, kNumel}, {kEmbed + kRows * kRowLen, kEmbed + kRows * kRowLen + 20},
    {kEmbed, kEmbed + kRows * kRowLen}, {0, kEmbed}};

// A step begun on g (the sparse rows set), this rank's rows touched, the union taken.
void unite_rows(GradReducer& g, const std::vector<int32_t>& ids, int W) {
  g.set_sparse_rows(kEmbed, kRows, kRowLen);
  g.begin_step(W);
  g.touch_rows(ids.data(), ids.size());
  GradReducerProbe::unite(g);
}

}  // namespace

TEST(GradStreamPieces, TouchedRowUnionIsEveryRanksRowsAndCountsTheRest) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 12; ++trial) {
    const int W = 2 + int(rng() % 3);
    const auto ids = random_ids(rng, W);
    const std::vector<uint8_t> want = union_of(ids);
    int64_t outside = 0;
    for (uint8_t x : want) outside += !x;
    on_ranks(W, [&](ThreadComm& comm, int r) {
      GradReducer g(comm, kNumel, dist::ReduceMode::exact, 64);
      unite_rows(g, ids[size_t(r)], W);
      EXPECT_EQ(GradReducerProbe::union_rows(g), want) << "trial " << trial << " rank " << r;
      EXPECT_EQ(g.skipped_rows(), outside) << "trial " << trial << " rank " << r;
    });
  }
}

TEST(GradStreamPieces, TravelCarriesExactlyTheShardsElementsOfTheRange) {
  std::mt19937 rng(12);
  for (int trial = 0; trial < 40; ++trial) {
    const int W = 2 + int(rng() % 3);
    const auto ids = random_ids(rng, W);
    const std::vector<uint8_t> u = union_of(ids);
    size_t a = rng() % kNumel, b = rng() % (kNumel + 1);
    if (a > b) std::swap(a, b);
    if (trial % 5 == 0) a = 0, b = kNumel;
    on_ranks(W, [&](ThreadComm& comm, int r) {
      GradReducer g(comm, kNumel, dist::ReduceMode::exact, 64);
      unite_rows(g, ids[size_t(r)], W);
      for (bool sparse : {false, true}) {
        const auto runs = GradReducerProbe::travel(g, a, b, sparse);
        ASSERT_EQ(runs.size(), size_t(W));
        for (size_t q = 0; q < size_t(W); ++q) {
          std::vector<size_t> got, want;
          size_t at = 0;
          for (size_t k = 0; k < runs[q].a.size(); ++k) {
            EXPECT_EQ(runs[q].at[k], at) << "packed offsets are cumulative";
            for (size_t i = runs[q].a[k]; i < runs[q].b[k]; ++i) got.push_back(i);
            at += runs[q].b[k] - runs[q].a[k];
          }
          EXPECT_EQ(runs[q].total, at);
          const dist::ShardLayout& L = g.layout();
          for (size_t i = std::max(a, L.begin(q)); i < std::min(b, L.end(q)); ++i)
            if (carried(i, u, sparse)) want.push_back(i);
          EXPECT_EQ(got, want) << "trial " << trial << " rank " << r << " runs of rank " << q
                               << " [" << a << ", " << b << ") sparse " << sparse;
        }
      }
    });
  }
}

TEST(GradStreamPieces, StreamedStepSumsTheRanksAndCountsItsUnits) {
  std::mt19937 rng(13);
  for (int trial = 0; trial < 6; ++trial) {
    const int W = 2 + trial % 3;
    const auto ids = random_ids(rng, W);
    const std::vector<uint8_t> u = union_of(ids);
    int64_t outside = 0;
    for (uint8_t x : u) outside += !x;
    // Rank r's gradient: small integers (exact sums), zero in the rows it did not touch.
    std::vector<std::vector<float>> grads(static_cast<size_t>(W), std::vector<float>(kNumel));
    for (int r = 0; r < W; ++r) {
      const std::vector<uint8_t> mine = union_of({ids[size_t(r)]});
      for (size_t i = 0; i < kNumel; ++i)
        grads[size_t(r)][i] = carried(i, mine, true) ? float(int(rng() % 33) - 16) : 0.0f;
    }
    for (bool stream : {true, false}) {
      on_ranks(W, [&](ThreadComm& comm, int r) {
        GradReducer g(comm, kNumel, dist::ReduceMode::exact, 64);
        g.set_sparse_rows(kEmbed, kRows, kRowLen);
        ASSERT_EQ(g.can_stream(), true);
        std::vector<float> buf, shard(g.shard_len());
        bool redo = true;
        for (int pass = 0; pass < 3 && redo; ++pass) {  // a fresh reducer measures its scales
          buf = grads[size_t(r)];
          g.begin_step(W);
          if (stream) {
            g.begin_stream(buf.data());
            for (auto [a, b] : kUnits) g.stream_range(a, b);
          }
          g.touch_rows(ids[size_t(r)].data(), ids[size_t(r)].size());
          g.add_micro_batch(buf.data());
          ASSERT_FALSE(g.finish(buf.data(), shard.data()));
          redo = g.redo();
        }
        ASSERT_FALSE(redo);
        EXPECT_EQ(g.streamed_units(), stream ? int64_t(kUnits.size()) : 0) << "W " << W;
        EXPECT_EQ(g.skipped_rows(), outside) << "W " << W << " stream " << stream;
        for (size_t i = 0; i < g.shard_len(); ++i) {
          float want = 0;
          for (int q = 0; q < W; ++q) want += grads[size_t(q)][g.shard_begin() + i];
          ASSERT_EQ(shard[i], want) << "W " << W << " rank " << r << " element "
                                    << g.shard_begin() + i << " stream " << stream;
        }
      });
    }
  }
}

// Deferred micro-batches (defer_micro_batch) with the last one streamed or not: W = 2..4 ranks
// with 1..4 micro-batches each (uneven), each kept copy holding garbage (NaN) in the rows its
// ids did not touch; every shard is the sum of every rank's micro-batches, untouched rows zero.
TEST(GradStreamPieces, DeferredMicroBatchesJoinTheStreamedOrPlainLastOne) {
  std::mt19937 rng(29);
  for (int trial = 0; trial < 6; ++trial) {
    const int W = 2 + trial % 3;
    std::vector<std::vector<std::vector<int32_t>>> ids(static_cast<size_t>(W));
    std::vector<std::vector<std::vector<float>>> grads(static_cast<size_t>(W)), kept = grads;
    int64_t total = 0;
    for (int r = 0; r < W; ++r) {
      ids[size_t(r)] = random_ids(rng, 1 + int(rng() % 4));
      for (const auto& v : ids[size_t(r)]) {
        const std::vector<uint8_t> mine = union_of({v});
        std::vector<float> g(kNumel), k(kNumel);
        for (size_t i = 0; i < kNumel; ++i) {
          g[i] = carried(i, mine, true) ? float(int(rng() % 33) - 16) : 0.0f;
          k[i] = carried(i, mine, true) ? g[i] : std::nanf("");
        }
        grads[size_t(r)].push_back(g);
        kept[size_t(r)].push_back(k);
        ++total;
      }
    }
    for (bool stream : {true, false}) {
      on_ranks(W, [&](ThreadComm& comm, int r) {
        GradReducer g(comm, kNumel, dist::ReduceMode::exact, 64);
        g.set_sparse_rows(kEmbed, kRows, kRowLen);
        const auto& my_ids = ids[size_t(r)];
        const size_t m = my_ids.size();
        std::vector<float> buf, shard(g.shard_len());
        bool redo = true;
        for (int pass = 0; pass < 3 && redo; ++pass) {
          g.begin_step(total);
          for (size_t k = 0; k + 1 < m; ++k) {
            g.touch_rows(my_ids[k].data(), my_ids[k].size());
            g.defer_micro_batch(kept[size_t(r)][k].data());
          }
          buf = grads[size_t(r)][m - 1];
          if (stream) {
            g.begin_stream(buf.data());
            for (auto [a, b] : kUnits) g.stream_range(a, b);
          }
          g.touch_rows(my_ids[m - 1].data(), my_ids[m - 1].size());
          g.add_micro_batch(buf.data());
          ASSERT_FALSE(g.finish(buf.data(), shard.data())) << "W " << W << " stream " << stream;
          redo = g.redo();
        }
        ASSERT_FALSE(redo);
        for (size_t i = 0; i < g.shard_len(); ++i) {
          float want = 0;
          for (const auto& rank : grads)
            for (const auto& v : rank) want += v[g.shard_begin() + i];
          ASSERT_EQ(shard[i], want) << "W " << W << " rank " << r << " element "
                                    << g.shard_begin() + i << " stream " << stream;
        }
      });
    }
  }
}
