// Layout-independent fingerprints (ckpt/fingerprint.h): the fast path equals the one-element
// reference; any split of a tensor into pieces sums to the same value; a one-element change,
// a swap and a shift are detected; a checkpoint's pieces written by 1 or 3 "ranks" fingerprint
// alike, and a hole in the pieces is an error naming the tensor.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

#include "ckpt/checkpoint.h"
#include "ckpt/fingerprint.h"
#include "ckpt/flat_range.h"
#include "core/cpu.h"
#include "core/error.h"
#include "kernels/isa_util.h"

using namespace olmo;
using namespace olmo::ckpt;

namespace {

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

struct TmpDir {
  std::filesystem::path p;
  explicit TmpDir(const char* name) : p(std::filesystem::path(::testing::TempDir()) / name) {
    std::filesystem::remove_all(p);
  }
  ~TmpDir() { std::filesystem::remove_all(p); }
};

}  // namespace

TEST(Fingerprint, FastEqualsReferenceAtAnyOffsetAndLength) {
  const auto x = random_floats(5000, 1);
  olmo::testing::IsaGuard guard;
  for (olmo::Isa isa : olmo::testing::isas()) {
  olmo::set_isa_override(isa);
  SCOPED_TRACE(olmo::isa_name(isa));
  for (size_t begin : {size_t(0), size_t(1), size_t(1023), size_t(1024), size_t(777777)})
    for (size_t n : {size_t(0), size_t(1), size_t(17), size_t(1024), size_t(5000)})
      EXPECT_EQ(fingerprint_partial(x.data(), n, begin),
                fingerprint_partial_reference(x.data(), n, begin))
          << "begin " << begin << " n " << n;
  // The OpenMP path (n >= 2^18).
  const auto big = random_floats(300000, 2);
  EXPECT_EQ(fingerprint_partial(big.data(), big.size(), 5),
            fingerprint_partial_reference(big.data(), big.size(), 5));
  }
}

TEST(Fingerprint, AnySplitSumsToTheWhole) {
  const auto x = random_floats(10000, 3);
  const uint64_t whole = fingerprint_partial(x.data(), x.size(), 0);
  std::mt19937 g(4);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<size_t> cuts = {0, x.size()};
    for (int k = 0; k < 5; ++k) cuts.push_back(g() % x.size());
    std::sort(cuts.begin(), cuts.end());
    uint64_t sum = 0;
    for (size_t i = 0; i + 1 < cuts.size(); ++i)
      sum += fingerprint_partial(x.data() + cuts[i], cuts[i + 1] - cuts[i], cuts[i]);
    EXPECT_EQ(sum, whole);
  }
}

TEST(Fingerprint, DetectsChangesSwapsAndShifts) {
  auto x = random_floats(4096, 5);
  const uint64_t f0 = fingerprint_partial(x.data(), x.size(), 0);
  for (size_t i : {size_t(0), size_t(1000), size_t(4095)}) {
    auto y = x;
    uint32_t w;
    std::memcpy(&w, &y[i], 4);
    w ^= 1;  // one ulp
    std::memcpy(&y[i], &w, 4);
    EXPECT_NE(fingerprint_partial(y.data(), y.size(), 0), f0) << "bit flip at " << i;
  }
  auto s = x;
  std::swap(s[10], s[11]);
  EXPECT_NE(fingerprint_partial(s.data(), s.size(), 0), f0) << "swap";
  std::swap(s[10], s[11]);
  std::swap(s[10], s[10 + 1024]);  // same position modulo the coefficient table
  EXPECT_NE(fingerprint_partial(s.data(), s.size(), 0), f0) << "swap across chunks";
  EXPECT_NE(fingerprint_partial(x.data(), x.size(), 1), f0) << "shifted by one element";
  const std::vector<float> zeros(4096, 0.0f), zeros2(4096, -0.0f);
  EXPECT_NE(fingerprint_partial(zeros.data(), 4096, 0), fingerprint_partial(zeros2.data(), 4096, 0));
}

TEST(Fingerprint, CheckpointPiecesOfAnyLayoutGiveTheSameValue) {
  TmpDir tmp("fingerprint_ckpt");
  const std::vector<int64_t> shape = {37, 29};
  const auto x = random_floats(37 * 29, 6);
  const uint64_t want = fingerprint_partial(x.data(), x.size(), 0);
  auto write = [&](const std::string& run, int world) {
    // Rank r's flat shard [r*L, (r+1)*L) cut into rectangular blocks, as the trainer writes
    // moments (flat_range_blocks); all "ranks" in this process, rank 0 last commits.
    const size_t n = x.size(), L = (n + world - 1) / world;
    std::vector<std::unique_ptr<CheckpointWriter>> w;
    w.push_back(std::make_unique<CheckpointWriter>(run, 1, 0, world));
    for (int r = 1; r < world; ++r) w.push_back(std::make_unique<CheckpointWriter>(run, 1, r, world));
    for (int r = 0; r < world; ++r) {
      const size_t a = std::min(n, r * L), b = std::min(n, (r + 1) * L);
      for (const FlatBlock& blk : flat_range_blocks(shape, a, b))
        w[r]->add_tensor("m", x.data() + blk.flat_begin, shape, blk.offset, blk.local_shape);
    }
    for (int r = 1; r < world; ++r) w[r]->close_shard();
    w[0]->commit();
  };
  for (int world : {1, 3, 4}) {
    const std::string run = (tmp.p / ("w" + std::to_string(world))).string();
    write(run, world);
    CheckpointReader r(run + "/step1");
    const auto fp = checkpoint_tensor_fingerprints(r);
    ASSERT_EQ(fp.count("m"), 1u);
    EXPECT_EQ(fp.at("m"), want) << "world " << world;
  }
}

TEST(Fingerprint, MissingPieceIsAnErrorNamingTheTensor) {
  TmpDir tmp("fingerprint_hole");
  const std::vector<int64_t> shape = {10, 10};
  const auto x = random_floats(100, 7);
  {
    CheckpointWriter w(tmp.p.string(), 1);
    for (const FlatBlock& blk : flat_range_blocks(shape, 0, 60))  // elements 60..99 missing
      w.add_tensor("holey", x.data() + blk.flat_begin, shape, blk.offset, blk.local_shape);
    w.commit();
  }
  CheckpointReader r((tmp.p / "step1").string());
  try {
    checkpoint_tensor_fingerprints(r);
    FAIL() << "a tensor with a hole was fingerprinted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("holey"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("60 elements"), std::string::npos) << e.what();
  }
}

// Not a timed assertion: prints the speed for people (the save-cost figure is in the README):
// in cache (64 Ki elements, 256 times) and from memory (16 Mi elements).
TEST(Fingerprint, SpeedFigure) {
  for (size_t n : {size_t(1) << 16, size_t(1) << 24}) {
    const auto x = random_floats(n, 8);
    const int reps = n < (size_t(1) << 20) ? 256 : 1;
    uint64_t f = 0;
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) f += fingerprint_partial(x.data(), x.size(), 3 + r);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_NE(f, 0u);
    std::printf("fingerprint (%s): %.3f ns/element over %zu elements x %d (%.2f GB/s)\n",
                olmo::isa_name(olmo::active_isa()), 1e9 * s / (double(n) * reps), n, reps,
                4.0 * double(n) * reps / s / 1e9);
  }
}
