// Flat-range blocks (ckpt/flat_range.h) and the multi-rank checkpoint protocol: W writers in one
// stepN-tmp, shards merged by rank 0, read back under another shard layout (resharding).
#include "ckpt/flat_range.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>
#include <vector>

#include "ckpt/checkpoint.h"
#include "core/error.h"

namespace fs = std::filesystem;
using namespace olmo::ckpt;

TEST(FlatRange, BlocksTileTheRangeExactly) {
  const std::vector<int64_t> shape = {7, 5};
  for (size_t a = 0; a <= 35; ++a)
    for (size_t b = a; b <= 35; ++b) {
      std::vector<int> hit(35, 0);
      size_t at = a;
      for (const FlatBlock& blk : flat_range_blocks(shape, a, b)) {
        EXPECT_EQ(blk.flat_begin, at);
        for (int64_t i = 0; i < blk.local_shape[0]; ++i)
          for (int64_t j = 0; j < blk.local_shape[1]; ++j)
            ++hit[size_t((blk.offset[0] + i) * 5 + blk.offset[1] + j)];
        at += blk.numel;
        EXPECT_EQ(blk.numel, size_t(blk.local_shape[0] * blk.local_shape[1]));
      }
      EXPECT_EQ(at, b);
      for (size_t i = 0; i < 35; ++i) EXPECT_EQ(hit[i], (i >= a && i < b) ? 1 : 0);
    }
  EXPECT_EQ(flat_range_blocks({10}, 3, 7).size(), 1u);
  EXPECT_THROW(flat_range_blocks({2, 2, 2}, 0, 3), olmo::Error);
  EXPECT_THROW(flat_range_blocks({4, 4}, 3, 17), olmo::Error);
}

TEST(ShardedCheckpoint, ThreeWritersOneCommitReadBackResharded) {
  const fs::path run = fs::temp_directory_path() / "olmo_sharded_ckpt_test";
  fs::remove_all(run);
  const std::vector<int64_t> shape = {6, 7};  // 42 elements
  std::vector<float> full(42);
  std::iota(full.begin(), full.end(), 0.0f);
  const size_t cut[4] = {0, 16, 32, 42};  // 3 ranks
  {
    CheckpointWriter w0(run.string(), 3, 0, 3);
    CheckpointWriter w1(run.string(), 3, 1, 3);
    CheckpointWriter w2(run.string(), 3, 2, 3);
    CheckpointWriter* ws[3] = {&w0, &w1, &w2};
    for (int r = 0; r < 3; ++r)
      for (const FlatBlock& b : flat_range_blocks(shape, cut[r], cut[r + 1]))
        ws[r]->add_tensor("m", full.data() + b.flat_begin, shape, b.offset, b.local_shape);
    w0.add_json("x", {{"a", 1}});
    EXPECT_THROW(w1.add_json("y", 1), olmo::Error);
    // rank 0 cannot commit before rank 2 closed its shard
    w1.close_shard();
  }
  EXPECT_FALSE(fs::exists(run / "step3"));  // rank 0's writer died uncommitted: tmp removed
  EXPECT_FALSE(fs::exists(run / "step3-tmp"));
  {
    CheckpointWriter w0(run.string(), 3, 0, 3);
    CheckpointWriter w1(run.string(), 3, 1, 3);
    CheckpointWriter w2(run.string(), 3, 2, 3);
    CheckpointWriter* ws[3] = {&w0, &w1, &w2};
    for (int r = 0; r < 3; ++r)
      for (const FlatBlock& b : flat_range_blocks(shape, cut[r], cut[r + 1]))
        ws[r]->add_tensor("m", full.data() + b.flat_begin, shape, b.offset, b.local_shape);
    w0.add_json("x", {{"a", 1}});
    w1.close_shard();
    EXPECT_THROW(w0.commit(), olmo::Error);  // rank 2 missing
  }
  {
    CheckpointWriter w0(run.string(), 3, 0, 3);
    CheckpointWriter w1(run.string(), 3, 1, 3);
    CheckpointWriter w2(run.string(), 3, 2, 3);
    CheckpointWriter* ws[3] = {&w0, &w1, &w2};
    for (int r = 0; r < 3; ++r)
      for (const FlatBlock& b : flat_range_blocks(shape, cut[r], cut[r + 1]))
        ws[r]->add_tensor("m", full.data() + b.flat_begin, shape, b.offset, b.local_shape);
    w0.add_json("x", {{"a", 1}});
    w1.close_shard();
    w2.close_shard();
    w0.commit();
  }
  CheckpointReader rd((run / "step3").string());
  rd.verify();
  std::vector<float> back(42, -1);
  rd.read_tensor("m", back.data(), shape);
  EXPECT_EQ(back, full);
  // Another layout (2 ranks: [0,21), [21,42)) reads its pieces.
  for (auto [a, b] : {std::pair<size_t, size_t>{0, 21}, {21, 42}}) {
    std::vector<float> part(b - a, -1);
    for (const FlatBlock& blk : flat_range_blocks(shape, a, b))
      rd.read_slice("m", DType::f32, part.data() + (blk.flat_begin - a), blk.offset, blk.local_shape);
    EXPECT_EQ(part, std::vector<float>(full.begin() + long(a), full.begin() + long(b)));
  }
  fs::remove_all(run);
}
