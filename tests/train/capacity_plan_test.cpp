// The "what you can train" table (train/capacity_plan.h) against hand-worked figures:
//   - olmo3-190m on 2 cores: one process, nothing sent; tokens/s = 2 x 110e9 x 0.769 / FLOPs per
//     token, with FLOPs per token worked here from the preset's shape (d 768, 12 layers of 12
//     heads of 64, ffn 3072, vocab 100352, window 4096 on 9 of 12 layers: full at seq 4096)
//     at seq 4096 by model/flops.h's formula written out: 6 x matmul params + 12 H hd x average
//     keys + 6 V D;
//   - days per billion tokens = 1e9 / tokens/s / 86400;
//   - more nodes never fewer tokens/s, a bigger preset never more; per-process memory falls with
//     the process count (the AdamW moments and gradient shard are 1/W);
//   - a faster network only shortens the communication: with 1e9 GB/s the 16-node row's tokens/s
//     is 16 x 64 / 2 = 512 times the 2-core row's.
// Seen red: dropping the lm-head term from the hand-worked FLOPs fails the 2-core figure.
#include <gtest/gtest.h>

#include <cmath>

#include "train/capacity_plan.h"

using namespace olmo::train;

namespace {
const CapacityRow& row(const std::vector<CapacityRow>& rows, const std::string& p,
                       int64_t nodes, int64_t cores) {
  for (const CapacityRow& r : rows)
    if (r.preset == p && r.nodes == nodes && r.cores == cores) return r;
  throw std::runtime_error("no row " + p);
}
}  // namespace

TEST(CapacityPlan, TwoCore190mFromHandWorkedFlops) {
  const CapacityAssumptions a;
  const auto rows = capacity_rows(a);
  ASSERT_EQ(rows.size(), 16u);
  const CapacityRow& r = row(rows, "olmo3-190m", 1, 2);
  const double D = 768, L = 12, H = 12, hd = 64, F = 3072, V = 100352, S = 4096;
  const double mm = D * H * hd * 2 + 2 * D * H * hd + 3 * D * F;  // q, o; k, v; SwiGLU
  // the sliding layers' window 4096 >= S: every layer attends (S + 1) / 2 keys on average
  const double fpt = L * (6 * mm + 12 * H * hd * (S + 1) / 2) + 6 * V * D;
  EXPECT_NEAR(r.flops_per_token / fpt, 1.0, 1e-12);
  EXPECT_EQ(r.processes, 1);
  EXPECT_EQ(r.comm_bytes_per_step, 0);
  EXPECT_NEAR(r.tokens_per_s, 2 * 110e9 * 0.769 / fpt, 1e-9 * r.tokens_per_s);
  EXPECT_NEAR(r.days_per_billion, 1e9 / r.tokens_per_s / 86400, 1e-12);
  EXPECT_GT(r.memory_bytes, 0);
}

TEST(CapacityPlan, MonotoneAndCommunicationOnly) {
  CapacityAssumptions a;
  const auto rows = capacity_rows(a);
  const char* presets[] = {"olmo3-190m", "olmo3-1b", "olmo3-7b", "olmo3-32b"};
  for (size_t p = 0; p < 4; ++p) {
    const CapacityRow& c2 = row(rows, presets[p], 1, 2);
    const CapacityRow& n1 = row(rows, presets[p], 1, 64);
    const CapacityRow& n16 = row(rows, presets[p], 16, 1024);
    const CapacityRow& n256 = row(rows, presets[p], 256, 16384);
    EXPECT_LT(c2.tokens_per_s, n1.tokens_per_s) << presets[p];
    EXPECT_LT(n1.tokens_per_s, n16.tokens_per_s) << presets[p];
    EXPECT_LT(n16.tokens_per_s, n256.tokens_per_s) << presets[p];
    EXPECT_GT(n16.comm_bytes_per_step, 0) << presets[p];
    EXPECT_GT(n1.memory_bytes, n16.memory_bytes) << presets[p];
    EXPECT_GT(n16.memory_bytes, n256.memory_bytes) << presets[p];
    if (p > 0) {
      EXPECT_LT(n16.tokens_per_s, row(rows, presets[p - 1], 16, 1024).tokens_per_s);
    }
  }
  a.net_gbytes_s = 1e9;
  const auto fast = capacity_rows(a);
  EXPECT_NEAR(row(fast, "olmo3-7b", 16, 1024).tokens_per_s /
                  row(fast, "olmo3-7b", 1, 2).tokens_per_s, 512.0, 1e-3);
}
