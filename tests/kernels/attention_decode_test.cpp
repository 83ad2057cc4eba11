// attention_decode (kernels/attention_decode.h) and rope_forward_at (kernels/rope.h), the decode
// half of the block's attention, against the plain causal reference in double
// (attention_forward_ref over the whole sequence): every position of sequences of 37 tokens
// through rings of full length, of the window (window 1, 5, 16), GQA and MHA, several rows at
// different positions in one call; rope at explicit positions equals rope_forward's rows; a
// window that no longer fits the ring is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/attention_decode.h"
#include "kernels/gradcheck.h"
#include "kernels/rope.h"

using namespace olmo::kernels;
using olmo::testing::randn;
using olmo::testing::rel_l2;

namespace {

std::vector<float> f32(const std::vector<double>& d) { return {d.begin(), d.end()}; }

struct Case {
  int64_t H, KV, hd, window;
};

}  // namespace

TEST(AttentionDecode, EveryPositionEqualsTheCausalReference) {
  const int64_t T = 37;
  for (const Case& c : {Case{4, 2, 16, 0}, Case{4, 4, 8, 5}, Case{6, 2, 16, 16}, Case{2, 1, 8, 1}}) {
    SCOPED_TRACE(olmo::cat("H", c.H, " KV", c.KV, " hd", c.hd, " window", c.window));
    const int64_t Q = c.H * c.hd, K = c.KV * c.hd, S = c.window > 0 ? c.window : T;
    // Three sequences (different data), each with its own ring.
    const int64_t n = 3;
    std::vector<std::vector<double>> q, k, v, ref;
    for (int64_t b = 0; b < n; ++b) {
      q.push_back(randn(size_t(T * Q), 10 + b));
      k.push_back(randn(size_t(T * K), 20 + b));
      v.push_back(randn(size_t(T * K), 30 + b));
      ref.emplace_back(size_t(T * Q));
      std::vector<double> lse(size_t(c.H * T));
      attention_forward_ref<double>({1, T, c.H, c.KV, c.hd, c.window}, q[b].data(), k[b].data(),
                                    v[b].data(), nullptr, ref[b].data(), lse.data());
    }
    std::vector<std::vector<float>> kr(n, std::vector<float>(size_t(S * K))),
        vr(n, std::vector<float>(size_t(S * K)));
    double worst = 0;
    // Step t: sequence b is at position t - b (sequences at different positions in one call).
    for (int64_t t = 0; t < T + n; ++t) {
      std::vector<int64_t> pos, who;
      for (int64_t b = 0; b < n; ++b)
        if (t - b >= 0 && t - b < T) pos.push_back(t - b), who.push_back(b);
      std::vector<float> qs, out(pos.size() * size_t(Q));
      std::vector<KvRing> ring;
      for (size_t i = 0; i < pos.size(); ++i) {
        const int64_t b = who[i], p = pos[i];
        const auto kq = f32(k[b]), vq = f32(v[b]), qq = f32(q[b]);
        std::copy(kq.begin() + p * K, kq.begin() + (p + 1) * K, kr[b].begin() + (p % S) * K);
        std::copy(vq.begin() + p * K, vq.begin() + (p + 1) * K, vr[b].begin() + (p % S) * K);
        qs.insert(qs.end(), qq.begin() + p * Q, qq.begin() + (p + 1) * Q);
        ring.push_back({kr[b].data(), vr[b].data()});
      }
      if (pos.empty()) continue;
      attention_decode(int64_t(pos.size()), c.H, c.KV, c.hd, c.window, S, qs.data(), ring.data(),
                       pos.data(), out.data());
      for (size_t i = 0; i < pos.size(); ++i) {
        std::vector<double> want(ref[who[i]].begin() + pos[i] * Q,
                                 ref[who[i]].begin() + (pos[i] + 1) * Q);
        std::vector<float> got(out.begin() + i * Q, out.begin() + (i + 1) * Q);
        worst = std::max(worst, rel_l2(got, want));
      }
    }
    EXPECT_LE(worst, 2e-6);
  }
}

TEST(AttentionDecode, RefusesAWindowOutsideTheRing) {
  std::vector<float> q(8), kv(4 * 8), out(8);
  KvRing r{kv.data(), kv.data()};
  const int64_t pos = 4;  // full attention at position 4 needs 5 slots
  EXPECT_THROW(attention_decode(1, 1, 1, 8, 0, 4, q.data(), &r, &pos, out.data()), olmo::Error);
  EXPECT_NO_THROW(attention_decode(1, 1, 1, 8, 4, 4, q.data(), &r, &pos, out.data()));
}

TEST(RopeAt, EqualsTheRowsOfTheWholeSequence) {
  const int64_t T = 20, H = 3, hd = 16;
  const RopeTable tab = rope_table(T, hd, 10000.0);
  const std::vector<float> x = f32(randn(size_t(T * H * hd), 5));
  std::vector<float> whole = x;
  rope_forward(whole.data(), 1, T, H, hd, tab);
  const std::vector<int64_t> pos = {19, 0, 7, 7};
  std::vector<float> rows;
  for (int64_t p : pos) rows.insert(rows.end(), x.begin() + p * H * hd, x.begin() + (p + 1) * H * hd);
  rope_forward_at(rows.data(), int64_t(pos.size()), H, hd, tab, pos.data());
  for (size_t i = 0; i < pos.size(); ++i)
    for (int64_t e = 0; e < H * hd; ++e)
      ASSERT_EQ(rows[i * H * hd + e], whole[pos[i] * H * hd + e]) << "row " << i << " elem " << e;
  const int64_t bad = 20;
  EXPECT_THROW(rope_forward_at(rows.data(), 1, H, hd, tab, &bad), olmo::Error);
}
