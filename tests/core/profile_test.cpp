// Step profiler (core/profile.h): a scope records its wall time, flops and one call under its
// key; disabled scopes record nothing; table() lists every row, per-class subtotals that add up
// the rows of that class, and the time no scope covered.
#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>
#include <string>

#include "core/profile.h"
#include "core/timer.h"

namespace profile = olmo::profile;

namespace {
void spin(double seconds) {
  const double t0 = olmo::now_seconds();
  while (olmo::now_seconds() - t0 < seconds) {
  }
}

const profile::Row* find(const std::vector<profile::Row>& rows, const std::string& key) {
  for (const auto& r : rows)
    if (r.key == key) return &r;
  return nullptr;
}

// The line of `table` whose first column is exactly `key` (columns after it are numbers).
std::string line_of(const std::string& table, const std::string& key) {
  std::istringstream in(table);
  std::string line;
  while (std::getline(in, line)) {
    const size_t b = line.find_first_not_of(' ');
    if (b == std::string::npos) continue;
    const size_t e = line.find("  ", b);
    if (line.substr(b, e - b) == key) return line;
  }
  return "";
}

struct Disable {
  ~Disable() {
    profile::enable(false);
    profile::reset();
  }
};
}  // namespace

TEST(Profile, ScopeRecordsTimeFlopsAndCalls) {
  Disable d;
  profile::reset();
  profile::enable(true);
  const double t0 = olmo::now_seconds();
  {
    OLMO_PROFILE("attention_fwd", 3.0e6);
    spin(0.004);
  }
  const double outer = olmo::now_seconds() - t0;
  {
    OLMO_PROFILE("attention_fwd", 1.0e6);
  }
  const auto rows = profile::rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].key, "attention_fwd");
  EXPECT_EQ(rows[0].klass, "attention_fwd");
  EXPECT_EQ(rows[0].calls, 2);
  EXPECT_EQ(rows[0].flops, 4.0e6);
  EXPECT_GE(rows[0].seconds, 0.004);
  EXPECT_LE(rows[0].seconds, outer + 0.01);
}

TEST(Profile, ShapeScopeKeysByShapeAndClass) {
  Disable d;
  profile::reset();
  profile::enable(true);
  { OLMO_PROFILE_SHAPE("gemm", 2, 3, 4, 48); }
  { OLMO_PROFILE_SHAPE("gemm", 5, 6, 7, 420); }
  { OLMO_PROFILE_SHAPE("gemm", 2, 3, 4, 48); }
  const auto rows = profile::rows();
  ASSERT_EQ(rows.size(), 2u);
  const profile::Row* a = find(rows, "gemm 2x3x4");
  const profile::Row* b = find(rows, "gemm 5x6x7");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->klass, "gemm");
  EXPECT_EQ(a->calls, 2);
  EXPECT_EQ(a->flops, 96.0);
  EXPECT_EQ(b->calls, 1);
  EXPECT_EQ(b->flops, 420.0);
}

TEST(Profile, DisabledScopesRecordNothing) {
  Disable d;
  profile::reset();
  profile::enable(false);
  {
    OLMO_PROFILE("norm", 1e9);
    OLMO_PROFILE_SHAPE("gemm", 1, 2, 3, 6);
    spin(0.001);
  }
  EXPECT_TRUE(profile::rows().empty());
  // A scope opened while disabled records nothing even if profiling is switched on inside it.
  {
    OLMO_PROFILE("norm", 1);
    profile::enable(true);
  }
  EXPECT_TRUE(profile::rows().empty());
}

TEST(Profile, TableListsRowsClassSumsAndRemainder) {
  Disable d;
  profile::reset();
  profile::enable(true);
  for (int i = 0; i < 2; ++i) {
    {
      OLMO_PROFILE_SHAPE("gemm", 8, 8, 8, 2e9);
      spin(0.003);
    }
    {
      OLMO_PROFILE_SHAPE("gemm", 4, 4, 4, 1e9);
      spin(0.002);
    }
    {
      OLMO_PROFILE("norm", 0);
      spin(0.001);
    }
  }
  profile::enable(false);
  double covered = 0, gemm_s = 0;
  for (const auto& r : profile::rows()) {
    covered += r.seconds;
    if (r.klass == "gemm") gemm_s += r.seconds;
  }
  const double total = covered + 0.010;  // 10 ms outside every scope
  const std::string t = profile::table(total, 2);
  for (const char* key : {"gemm 8x8x8", "gemm 4x4x4", "norm", "gemm", "-- per class --",
                          "other (not in any scope)", "step (wall)"})
    EXPECT_NE(t.find(key), std::string::npos) << key << "\n" << t;
  // Per-class line of gemm: ms per step = the sum of its two rows / 2 steps, calls 2 per step,
  // GFLOP/s = (2 * 3e9 flops) / its seconds.
  const std::string g = line_of(t.substr(t.find("-- per class --")), "gemm");
  ASSERT_FALSE(g.empty()) << t;
  double ms = 0, share = 0, gf = 0, calls = 0;
  ASSERT_EQ(std::sscanf(g.c_str(), " gemm %lf %lf%% %lf %lf", &ms, &share, &gf, &calls), 4) << g;
  EXPECT_NEAR(ms, 1e3 * gemm_s / 2, 0.01);
  EXPECT_NEAR(share, 100.0 * gemm_s / total, 0.05);
  EXPECT_NEAR(gf, 6e9 / gemm_s * 1e-9, 0.01 * gf);
  EXPECT_EQ(calls, 2);
  // The remainder: 10 ms over 2 steps = 5 ms per step.
  const std::string o = line_of(t, "other (not in any scope)");
  double oms = 0;
  ASSERT_EQ(std::sscanf(o.c_str(), " other (not in any scope) %lf", &oms), 1) << o;
  EXPECT_NEAR(oms, 5.0, 0.01);
  // norm has no flops: no GFLOP/s figure.
  const std::string n = line_of(t, "norm");
  EXPECT_NE(n.find(" - "), std::string::npos) << n;
}
