// Profiler scopes at the public kernel entry points: each call records exactly one row of its
// op class (attention_fwd / attention_bwd with model/flops.cpp's FLOP count, norm, rope, swiglu,
// elementwise, embedding, loss next to the gemm rows of the loss's matmuls), never two nested
// scopes (the rows of one call add up to at most its wall time), nothing while disabled.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/profile.h"
#include "core/timer.h"
#include "kernels/attention.h"
#include "kernels/elementwise.h"
#include "kernels/embedding.h"
#include "kernels/gemm.h"
#include "kernels/gradcheck.h"
#include "kernels/loss.h"
#include "kernels/norm.h"
#include "kernels/rope.h"
#include "kernels/swiglu.h"

using namespace olmo::kernels;
namespace profile = olmo::profile;
using olmo::testing::randn;
using olmo::testing::to;

namespace {
struct Profiling {
  Profiling() {
    profile::reset();
    profile::enable(true);
  }
  ~Profiling() {
    profile::enable(false);
    profile::reset();
  }
};

// Runs f with profiling on; returns the rows it recorded and checks they cover <= its wall time.
template <class F>
std::vector<profile::Row> record(F&& f) {
  profile::reset();
  const double t0 = olmo::now_seconds();
  f();
  const double wall = olmo::now_seconds() - t0;
  auto rows = profile::rows();
  double covered = 0;
  for (const auto& r : rows) covered += r.seconds;
  EXPECT_LE(covered, wall * 1.0001 + 1e-6) << "nested scopes count time twice";
  return rows;
}

void expect_one(const std::vector<profile::Row>& rows, const std::string& key, double flops) {
  ASSERT_EQ(rows.size(), 1u) << key;
  EXPECT_EQ(rows[0].key, key);
  EXPECT_EQ(rows[0].calls, 1) << key;
  EXPECT_EQ(rows[0].flops, flops) << key;
  EXPECT_GT(rows[0].seconds, 0.0) << key;
}
}  // namespace

TEST(ProfileScopes, AttentionRecordsFlopsOfTheModelConvention) {
  Profiling p;
  const int64_t B = 2, T = 40, H = 4, KV = 2, hd = 16;
  auto q = to<float>(randn(B * T * H * hd, 1)), k = to<float>(randn(B * T * KV * hd, 2)),
       v = to<float>(randn(B * T * KV * hd, 3)), dout = to<float>(randn(B * T * H * hd, 4));
  std::vector<float> out(q.size()), lse(B * H * T), dq(q.size()), dk(k.size()), dv(v.size());
  for (int64_t window : {0, 8, 64}) {
    const AttnShape s{B, T, H, KV, hd, window};
    // model/flops.cpp: 12 H hd avg_keys_attended(w, T) per token, 4 of them forward, 8 backward.
    const double w = double(window);
    const double pairs = window <= 0 || window >= T ? double(T) * (T + 1) / 2
                                                    : w * (w + 1) / 2 + (T - w) * w;
    const double fwd = 4.0 * B * H * hd * pairs;
    expect_one(record([&] { attention_forward(s, q.data(), k.data(), v.data(), nullptr,
                                              out.data(), lse.data()); }),
               "attention_fwd", fwd);
    expect_one(record([&] {
                 attention_backward(s, q.data(), k.data(), v.data(), nullptr, out.data(),
                                    lse.data(), dout.data(), dq.data(), dk.data(), dv.data());
               }),
               "attention_bwd", 2 * fwd);
  }
}

TEST(ProfileScopes, MemoryBoundKernelsRecordTheirClass) {
  Profiling p;
  const int64_t N = 6, D = 24, V = 11;
  auto x = to<float>(randn(N * D, 5)), w = to<float>(randn(D, 6)), dy = to<float>(randn(N * D, 7));
  std::vector<float> y(N * D), rstd(N), dx(N * D), dw(D);
  expect_one(record([&] { rmsnorm_forward(x.data(), w.data(), y.data(), rstd.data(), N, D, 1e-6f); }),
             "norm", 0);
  expect_one(record([&] {
               rmsnorm_backward(dy.data(), x.data(), w.data(), rstd.data(), dx.data(), dw.data(), N, D);
             }),
             "norm", 0);
  const RopeTable tab = rope_table(8, 8, 1e4);
  expect_one(record([&] { rope_forward(y.data(), 2, 3, 1, 8, tab); }), "rope", 0);
  expect_one(record([&] { rope_backward(y.data(), 2, 3, 1, 8, tab); }), "rope", 0);
  expect_one(record([&] { swiglu_forward(x.data(), dy.data(), y.data(), N * D); }), "swiglu", 0);
  expect_one(record([&] {
               swiglu_backward(x.data(), dy.data(), w.data(), dx.data(), y.data(), D);
             }),
             "swiglu", 0);
  expect_one(record([&] { add(y.data(), x.data(), dy.data(), N * D); }), "elementwise", 0);
  expect_one(record([&] { add_inplace(y.data(), x.data(), N * D); }), "elementwise", 0);
  expect_one(record([&] { axpy(y.data(), 0.5f, x.data(), N * D); }), "elementwise", 0);
  expect_one(record([&] { scale_inplace(y.data(), 0.5f, N * D); }), "elementwise", 0);
  expect_one(record([&] { (void)sum_squares(y.data(), N * D); }), "elementwise", 0);
  auto table = to<float>(randn(V * D, 8));
  std::vector<int32_t> ids = {1, 3, 3, 0, 10, 2};
  std::vector<float> dW(V * D);
  expect_one(record([&] { embedding_forward(table.data(), ids.data(), N, D, y.data(), V); }),
             "embedding", 0);
  expect_one(record([&] { embedding_backward(dy.data(), ids.data(), N, D, dW.data(), V); }),
             "embedding", 0);
}

TEST(ProfileScopes, LossRowsAndItsGemmsAreSeparateLeaves) {
  Profiling p;
  const int64_t N = 10, D = 16, V = 37;
  auto x = to<float>(randn(N * D, 9)), W = to<float>(randn(V * D, 10));
  std::vector<int32_t> t = {1, 5, -100, 36, 0, 7, 7, 2, -100, 9};
  std::vector<float> dx(N * D), dW(V * D);
  auto rows = record([&] {
    lm_head_loss(x.data(), W.data(), t.data(), N, D, V, 1e-4f, 0.125f, dx.data(), dW.data(), 4);
  });
  // 8 valid rows in chunks of 4: per chunk one row pass and three gemms.
  int64_t loss_calls = 0, gemm_calls = 0;
  for (const auto& r : rows) {
    if (r.key == "loss") loss_calls += r.calls;
    if (r.klass == "gemm") gemm_calls += r.calls;
  }
  EXPECT_EQ(loss_calls, 2);
  EXPECT_EQ(gemm_calls, 6);
}

TEST(ProfileScopes, DisabledRecordsNothing) {
  profile::enable(false);
  profile::reset();
  const int64_t n = 1000;
  auto a = to<float>(randn(n, 11)), b = to<float>(randn(n, 12));
  add_inplace(a.data(), b.data(), n);
  swiglu_forward(a.data(), b.data(), a.data(), n);
  EXPECT_TRUE(profile::rows().empty());
}
