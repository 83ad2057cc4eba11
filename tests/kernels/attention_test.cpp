// Attention kernels: the fast tiled forward/backward against the plain reference (computed in
// double) for full causal, sliding window (smaller and larger than T, and 1), document masking,
// GQA/MHA, T not a multiple of the tile, head dims 16/24/64/128, under every ISA path; bitwise
// determinism across runs and thread counts; gradient check of the reference in double; bad shapes.
#include <gtest/gtest.h>
#include <omp.h>

#include <string>
#include <vector>

#include "core/cpu.h"
#include "core/error.h"
#include "kernels/isa_util.h"
#include "kernels/attention.h"
#include "kernels/gradcheck.h"

using namespace olmo::kernels;
using olmo::testing::numeric_grad;
using olmo::testing::randn;
using olmo::testing::rel_l2;
using olmo::testing::to;

using olmo::testing::isas;
using olmo::testing::IsaGuard;

namespace {

struct Case {
  AttnShape s;
  bool docs;
};

std::string name(const Case& c) {
  return olmo::cat("B", c.s.B, " T", c.s.T, " H", c.s.H, " KV", c.s.KV, " hd", c.s.hd, " w",
                   c.s.window, c.docs ? " docs" : "");
}

// Documents of pseudo-random lengths 1..40 per batch row.
std::vector<int32_t> make_docs(const AttnShape& s, uint64_t seed) {
  std::vector<int32_t> d(s.B * s.T);
  uint64_t x = seed;
  for (int64_t b = 0; b < s.B; ++b) {
    int32_t id = 0;
    int64_t left = 0;
    for (int64_t t = 0; t < s.T; ++t) {
      if (left == 0) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        left = 1 + int64_t((x >> 33) % 40);
        ++id;
      }
      d[b * s.T + t] = id;
      --left;
    }
  }
  return d;
}

struct Data {
  std::vector<double> q, k, v, dout;
  std::vector<int32_t> docs;
};

Data make_data(const Case& c, uint64_t seed) {
  const AttnShape& s = c.s;
  Data d;
  d.q = randn(s.B * s.T * s.H * s.hd, seed + 1);
  d.k = randn(s.B * s.T * s.KV * s.hd, seed + 2);
  d.v = randn(s.B * s.T * s.KV * s.hd, seed + 3);
  d.dout = randn(s.B * s.T * s.H * s.hd, seed + 4);
  if (c.docs) d.docs = make_docs(s, seed + 5);
  return d;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> cs = {
      {{2, 100, 4, 2, 16, 0}, false},  {{1, 130, 2, 2, 64, 0}, true},
      {{1, 150, 4, 1, 64, 37}, false}, {{2, 77, 2, 1, 16, 20}, true},
      {{1, 50, 2, 2, 24, 100}, false}, {{1, 33, 3, 3, 16, 2}, false},
      {{1, 200, 2, 1, 128, 64}, true}, {{1, 129, 6, 2, 64, 0}, false},
  };
  return cs;
}

}  // namespace

TEST(Attention, FastMatchesReferenceEveryIsa) {
  for (const Case& c : cases()) {
    const AttnShape& s = c.s;
    Data d = make_data(c, 100 + s.T);
    const int32_t* docs = c.docs ? d.docs.data() : nullptr;
    // Reference in double from the same fp32-rounded inputs.
    auto qf = to<float>(d.q), kf = to<float>(d.k), vf = to<float>(d.v), gf = to<float>(d.dout);
    auto q = to<double>(std::vector<double>(qf.begin(), qf.end()));
    auto k = to<double>(std::vector<double>(kf.begin(), kf.end()));
    auto v = to<double>(std::vector<double>(vf.begin(), vf.end()));
    auto g = to<double>(std::vector<double>(gf.begin(), gf.end()));
    std::vector<double> out(q.size()), lse(s.B * s.H * s.T), dq(q.size()), dk(k.size()),
        dv(v.size());
    attention_forward_ref<double>(s, q.data(), k.data(), v.data(), docs, out.data(), lse.data());
    attention_backward_ref<double>(s, q.data(), k.data(), v.data(), docs, out.data(), lse.data(),
                                   g.data(), dq.data(), dk.data(), dv.data());
    for (olmo::Isa isa : isas()) {
      olmo::set_isa_override(isa);
      SCOPED_TRACE(name(c) + " isa=" + olmo::isa_name(isa));
      std::vector<float> o(q.size(), NAN), l(lse.size(), NAN), gq(q.size(), NAN),
          gk(k.size(), NAN), gv(v.size(), NAN);
      attention_forward(s, qf.data(), kf.data(), vf.data(), docs, o.data(), l.data());
      EXPECT_LT(rel_l2(o, out), 2e-6);
      double lerr = 0;
      for (size_t i = 0; i < l.size(); ++i) lerr = std::max(lerr, std::fabs(l[i] - lse[i]));
      EXPECT_LT(lerr, 2e-5);
      attention_backward(s, qf.data(), kf.data(), vf.data(), docs, o.data(), l.data(), gf.data(),
                         gq.data(), gk.data(), gv.data());
      EXPECT_LT(rel_l2(gq, dq), 2e-5);
      EXPECT_LT(rel_l2(gk, dk), 2e-5);
      EXPECT_LT(rel_l2(gv, dv), 2e-5);
    }
    olmo::clear_isa_override();
  }
}

TEST(Attention, DeterministicAcrossRunsAndThreadCounts) {
  Case c{{2, 150, 4, 2, 64, 48}, true};
  const AttnShape& s = c.s;
  Data d = make_data(c, 7);
  auto q = to<float>(d.q), k = to<float>(d.k), v = to<float>(d.v), g = to<float>(d.dout);
  auto run = [&](int threads) {
    omp_set_num_threads(threads);
    std::vector<float> o(q.size()), l(s.B * s.H * s.T), gq(q.size()), gk(k.size()), gv(v.size());
    attention_forward(s, q.data(), k.data(), v.data(), d.docs.data(), o.data(), l.data());
    attention_backward(s, q.data(), k.data(), v.data(), d.docs.data(), o.data(), l.data(),
                       g.data(), gq.data(), gk.data(), gv.data());
    std::vector<float> all = o;
    for (auto* x : {&l, &gq, &gk, &gv}) all.insert(all.end(), x->begin(), x->end());
    return all;
  };
  const int nt = omp_get_max_threads();
  auto a = run(2), b = run(2), one = run(1), three = run(3);
  omp_set_num_threads(nt);
  EXPECT_TRUE(a == b);
  EXPECT_TRUE(a == one);
  EXPECT_TRUE(a == three);
}

// The reference backward is the gradient of L = sum(out * R) (central differences in double).
TEST(Attention, ReferenceGradientCheck) {
  for (Case c : {Case{{1, 9, 2, 1, 4, 4}, true}, Case{{2, 7, 2, 2, 3, 0}, false}}) {
    const AttnShape& s = c.s;
    SCOPED_TRACE(name(c));
    Data d = make_data(c, 3);
    const int32_t* docs = c.docs ? d.docs.data() : nullptr;
    const size_t nq = d.q.size(), nk = d.k.size();
    std::vector<double> x = d.q;
    x.insert(x.end(), d.k.begin(), d.k.end());
    x.insert(x.end(), d.v.begin(), d.v.end());
    auto loss = [&](const std::vector<double>& x) {
      std::vector<double> out(nq), lse(s.B * s.H * s.T);
      attention_forward_ref<double>(s, x.data(), x.data() + nq, x.data() + nq + nk, docs,
                                    out.data(), lse.data());
      double L = 0;
      for (size_t i = 0; i < nq; ++i) L += out[i] * d.dout[i];
      return L;
    };
    std::vector<double> num = numeric_grad(loss, x);
    std::vector<double> out(nq), lse(s.B * s.H * s.T), ana(x.size());
    attention_forward_ref<double>(s, d.q.data(), d.k.data(), d.v.data(), docs, out.data(),
                                  lse.data());
    attention_backward_ref<double>(s, d.q.data(), d.k.data(), d.v.data(), docs, out.data(),
                                   lse.data(), d.dout.data(), ana.data(), ana.data() + nq,
                                   ana.data() + nq + nk);
    EXPECT_LT(olmo::testing::max_scaled_err(ana, num, 1e-6, 1e-8), 1.0);
  }
}

// The mask itself, checked against an independent definition: with v = one-hot of the key index,
// out[i] is the attention distribution over keys, zero exactly where the mask hides a key.
TEST(Attention, MaskMatchesDefinition) {
  const int64_t T = 70;
  for (int64_t w : {int64_t(0), int64_t(1), int64_t(5), int64_t(64), int64_t(200)})
    for (bool use_docs : {false, true}) {
      AttnShape s{1, T, 1, 1, T, w};
      std::vector<int32_t> docs = make_docs(s, 11);
      std::vector<float> q(T * T), k(T * T), v(T * T, 0.0f), o(T * T), l(T);
      auto r = randn(2 * T * T, 5, 0.3);
      for (int64_t i = 0; i < T * T; ++i) q[i] = float(r[i]), k[i] = float(r[T * T + i]);
      for (int64_t j = 0; j < T; ++j) v[j * T + j] = 1.0f;
      attention_forward(s, q.data(), k.data(), v.data(), use_docs ? docs.data() : nullptr,
                        o.data(), l.data());
      for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < T; ++j) {
          bool vis = j <= i && (w <= 0 || i - j < w) && (!use_docs || docs[i] == docs[j]);
          if (vis)
            EXPECT_GT(o[i * T + j], 0.0f) << "w=" << w << " i=" << i << " j=" << j;
          else
            EXPECT_EQ(o[i * T + j], 0.0f) << "w=" << w << " i=" << i << " j=" << j;
        }
      EXPECT_EQ(attention_visible_pairs(s, use_docs ? docs.data() : nullptr),
                [&] {
                  int64_t n = 0;
                  for (int64_t i = 0; i < T * T; ++i) n += o[i] > 0;
                  return n;
                }());
    }
}

TEST(Attention, BadShapeThrows) {
  std::vector<float> x(4 * 4 * 8, 0.0f), l(64);
  AttnShape s{1, 4, 3, 2, 8, 0};  // H not a multiple of KV
  EXPECT_THROW(attention_forward(s, x.data(), x.data(), x.data(), nullptr, x.data(), l.data()),
               olmo::Error);
  AttnShape z{1, 0, 2, 2, 8, 0};
  EXPECT_THROW(attention_forward(z, x.data(), x.data(), x.data(), nullptr, x.data(), l.data()),
               olmo::Error);
}
