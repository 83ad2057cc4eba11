// bf16 attention (kernels/attention_bf16.h): the VDPBF16PS kernels against the plain reference
// with the same rounding points (computed in double) on the shapes of attention_test.cpp (full
// causal, sliding windows, documents, GQA/MHA, ragged T, hd 16/24/64/128); their error against
// the fp32 kernels, bounded from the bf16 rounding; gradient check of the reference (rounding
// off) by central differences in double; determinism across runs and thread counts; the exact
// emulation where AVX512_BF16 is not in use; the choice of kernels.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/cpu.h"
#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/attention_bf16.h"
#include "kernels/bf16_modes.h"
#include "kernels/gradcheck.h"
#include "kernels/isa_util.h"

using namespace olmo::kernels;
using olmo::testing::numeric_grad;
using olmo::testing::randn;
using olmo::testing::rel_l2;
using olmo::testing::to;

namespace {

// bf16 unit roundoff: 8 significant bits, round to nearest: |bf16(x) - x| <= 2^-8 |x|.
constexpr double kU = 1.0 / 256;

#define NEED_NATIVE_BF16()                                                                 \
  if (!attention_bf16_native())                                                            \
  GTEST_SKIP() << "no AVX512_BF16 in use here (CPU, OLMO_ISA or OLMO_BF16): the bf16 attention " \
                  "kernels do not run"

struct Case {
  AttnShape s;
  bool docs;
};

std::string name(const Case& c) {
  return olmo::cat("B", c.s.B, " T", c.s.T, " H", c.s.H, " KV", c.s.KV, " hd", c.s.hd, " w",
                   c.s.window, c.docs ? " docs" : "");
}

std::vector<int32_t> make_docs(const AttnShape& s, uint64_t seed) {  // lengths 1..40
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

// fp32 inputs (unit normal) and their double copies.
struct Data {
  std::vector<float> q, k, v, g;
  std::vector<double> qd, kd, vd, gd;
  std::vector<int32_t> docs;
  const int32_t* doc() const { return docs.empty() ? nullptr : docs.data(); }
};

Data make_data(const Case& c, uint64_t seed) {
  const AttnShape& s = c.s;
  Data d;
  d.q = to<float>(randn(s.B * s.T * s.H * s.hd, seed + 1));
  d.k = to<float>(randn(s.B * s.T * s.KV * s.hd, seed + 2));
  d.v = to<float>(randn(s.B * s.T * s.KV * s.hd, seed + 3));
  d.g = to<float>(randn(s.B * s.T * s.H * s.hd, seed + 4));
  d.qd.assign(d.q.begin(), d.q.end()), d.kd.assign(d.k.begin(), d.k.end());
  d.vd.assign(d.v.begin(), d.v.end()), d.gd.assign(d.g.begin(), d.g.end());
  if (c.docs) d.docs = make_docs(s, seed + 5);
  return d;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> cs = {
      {{2, 100, 4, 2, 16, 0}, false},  {{1, 130, 2, 2, 64, 0}, true},
      {{1, 150, 4, 1, 64, 37}, false}, {{2, 77, 2, 1, 16, 20}, true},
      {{1, 50, 2, 2, 24, 100}, false}, {{1, 33, 3, 3, 16, 2}, false},
      {{1, 200, 2, 1, 128, 64}, true}, {{1, 129, 6, 2, 64, 0}, false},
      {{1, 300, 2, 2, 64, 0}, false},
  };
  return cs;
}

struct Result {
  std::vector<float> o, l, dq, dk, dv;
};

template <class Fwd, class Bwd>
Result run(const Case& c, const Data& d, Fwd fwd, Bwd bwd) {
  const AttnShape& s = c.s;
  Result r;
  r.o.assign(d.q.size(), NAN), r.l.assign(s.B * s.H * s.T, NAN);
  r.dq.assign(d.q.size(), NAN), r.dk.assign(d.k.size(), NAN), r.dv.assign(d.v.size(), NAN);
  fwd(s, d.q.data(), d.k.data(), d.v.data(), d.doc(), r.o.data(), r.l.data());
  bwd(s, d.q.data(), d.k.data(), d.v.data(), d.doc(), r.o.data(), r.l.data(), d.g.data(),
      r.dq.data(), r.dk.data(), r.dv.data());
  return r;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::fmax(m, std::fabs(double(a[i]) - b[i]));
  return m;
}

}  // namespace

// The fast kernels compute the reference's rounded values in a different order: fp32
// accumulation (VDPBF16PS sums pairs, then tiles) against double, and a polynomial exp2. Those
// alone give ~1e-6 (the fp32 kernels meet 2e-6 / 2e-5 against the same kind of reference). On
// top, an element of P or dS whose exact value lies within that fp32 error (relative e ~ 1e-6)
// of a bf16 rounding midpoint may round to the other neighbour: probability ~ 2e / 2^-7 (the
// bf16 spacing is 2^-7 relative at most) ~ 3e-4, each flip a relative error of up to 2^-7 in
// one term of a weighted sum, so a relative rms of <= 2^-7 sqrt(3e-4) ~ 1.4e-4 from flips.
// Bounds: forward 2e-4, lse 2e-5 (absolute; P's rounding does not enter lse), backward 4e-4
// (dS = P (dP - D) cancels, so dS carries a larger relative fp32 error than P).
TEST(AttentionBf16, FastMatchesReference) {
  NEED_NATIVE_BF16();
  for (const Case& c : cases()) {
    SCOPED_TRACE(name(c));
    const AttnShape& s = c.s;
    const Data d = make_data(c, 200 + s.T);
    const Result f = run(c, d, attention_forward_bf16, attention_backward_bf16);
    std::vector<double> o(d.q.size()), l(f.l.size()), dq(d.q.size()), dk(d.k.size()),
        dv(d.v.size());
    attention_forward_bf16_ref<double>(s, d.qd.data(), d.kd.data(), d.vd.data(), d.doc(),
                                       o.data(), l.data());
    EXPECT_LT(rel_l2(f.o, o), 2e-4);
    EXPECT_LT(max_abs_diff(f.l, l), 2e-5);
    // Backward from the fast forward's out and lse (as the model does), in double.
    const std::vector<double> fo(f.o.begin(), f.o.end()), fl(f.l.begin(), f.l.end());
    attention_backward_bf16_ref<double>(s, d.qd.data(), d.kd.data(), d.vd.data(), d.doc(),
                                        fo.data(), fl.data(), d.gd.data(), dq.data(), dk.data(),
                                        dv.data());
    if (c.s.T == 300)
      std::printf("  fast vs reference: out %.2e, lse %.2e (abs), dq %.2e, dk %.2e, dv %.2e\n",
                  rel_l2(f.o, o), max_abs_diff(f.l, l), rel_l2(f.dq, dq), rel_l2(f.dk, dk),
                  rel_l2(f.dv, dv));
    EXPECT_LT(rel_l2(f.dq, dq), 4e-4);
    EXPECT_LT(rel_l2(f.dk, dk), 4e-4);
    EXPECT_LT(rel_l2(f.dv, dv), 4e-4);
  }
}

// Error of the bf16 kernels against the fp32 kernels, bounded from the rounding:
//   bf16 - fp32 = (bf16 - exact(q~, k~, v~, dO~)) + (exact(q~, k~, v~, dO~) - fp32).
// The second term is the effect of rounding the inputs, E_in: measured here with the exact
// reference (double, no rounding) on rounded against unrounded inputs. The first is the rounding
// of P and dS before their products: every element off by <= 2^-8 relative, independently, so
// each output (a weighted sum of such terms) is off by a relative rms <= 2^-8 / sqrt(3) < u.
// Check: rel_l2(bf16, fp32) <= E_in + u for every output (and lse within E_in's own lse error
// + u, absolute), and > u / 16 (bf16 really used: the fp32 path would give ~1e-6).
TEST(AttentionBf16, ErrorAgainstFp32Bounded) {
  NEED_NATIVE_BF16();
  for (const Case& c : cases()) {
    SCOPED_TRACE(name(c));
    const AttnShape& s = c.s;
    const Data d = make_data(c, 300 + s.T);
    const Result b = run(c, d, attention_forward_bf16, attention_backward_bf16);
    const Result f = run(c, d, attention_forward, attention_backward);
    // E_in: exact attention on rounded inputs vs on the inputs.
    auto rnd = [](const std::vector<double>& x) {
      std::vector<double> r(x.size());
      for (size_t i = 0; i < x.size(); ++i) r[i] = bf16_round_ftz(float(x[i]));
      return r;
    };
    const auto qr = rnd(d.qd), kr = rnd(d.kd), vr = rnd(d.vd), gr = rnd(d.gd);
    auto exact = [&](const std::vector<double>& q, const std::vector<double>& k,
                     const std::vector<double>& v, const std::vector<double>& g) {
      std::vector<std::vector<double>> r(5);
      r[0].resize(q.size()), r[1].resize(s.B * s.H * s.T), r[2].resize(q.size());
      r[3].resize(k.size()), r[4].resize(k.size());
      attention_forward_ref<double>(s, q.data(), k.data(), v.data(), d.doc(), r[0].data(),
                                    r[1].data());
      attention_backward_ref<double>(s, q.data(), k.data(), v.data(), d.doc(), r[0].data(),
                                     r[1].data(), g.data(), r[2].data(), r[3].data(),
                                     r[4].data());
      return r;
    };
    const auto e0 = exact(d.qd, d.kd, d.vd, d.gd), e1 = exact(qr, kr, vr, gr);
    const std::vector<float>* bo[5] = {&b.o, &b.l, &b.dq, &b.dk, &b.dv};
    const std::vector<float>* fo[5] = {&f.o, &f.l, &f.dq, &f.dk, &f.dv};
    const char* what[5] = {"out", "lse", "dq", "dk", "dv"};
    for (int i = 0; i < 5; ++i) {
      SCOPED_TRACE(what[i]);
      if (i == 1) {  // lse: absolute
        double ein = 0, err = 0;
        for (size_t j = 0; j < e0[1].size(); ++j) {
          ein = std::fmax(ein, std::fabs(e1[1][j] - e0[1][j]));
          err = std::fmax(err, std::fabs(double(b.l[j]) - double(f.l[j])));
        }
        EXPECT_LE(err, ein + kU);
        continue;
      }
      const double ein = rel_l2(e1[i], e0[i]), err = rel_l2(*bo[i], *fo[i]);
      if (c.s.T == 300)
        std::printf("  %s: rel_l2(bf16, fp32) = %.2e, input-rounding effect E_in = %.2e, "
                    "bound E_in + u = %.2e\n", what[i], err, ein, ein + kU);
      EXPECT_LE(err, ein + kU);
      EXPECT_GT(err, kU / 16);
    }
  }
}

// With rounding off, the bf16 reference is exact attention: equal to the plain reference, and
// its backward is the gradient of L = sum(out * R) (central differences in double).
TEST(AttentionBf16, ReferenceUnroundedIsExactAndGradientChecks) {
  for (Case c : {Case{{1, 9, 2, 1, 4, 4}, true}, Case{{2, 7, 2, 2, 3, 0}, false}}) {
    const AttnShape& s = c.s;
    SCOPED_TRACE(name(c));
    const Data d = make_data(c, 3);
    const size_t nq = d.qd.size(), nk = d.kd.size();
    std::vector<double> x = d.qd;
    x.insert(x.end(), d.kd.begin(), d.kd.end());
    x.insert(x.end(), d.vd.begin(), d.vd.end());
    auto loss = [&](const std::vector<double>& x) {
      std::vector<double> out(nq), lse(s.B * s.H * s.T);
      attention_forward_bf16_ref<double>(s, x.data(), x.data() + nq, x.data() + nq + nk,
                                         d.doc(), out.data(), lse.data(), false);
      double L = 0;
      for (size_t i = 0; i < nq; ++i) L += out[i] * d.gd[i];
      return L;
    };
    const std::vector<double> num = numeric_grad(loss, x);
    std::vector<double> out(nq), lse(s.B * s.H * s.T), ana(x.size()), o2(nq), l2(lse.size());
    attention_forward_bf16_ref<double>(s, d.qd.data(), d.kd.data(), d.vd.data(), d.doc(),
                                       out.data(), lse.data(), false);
    attention_forward_ref<double>(s, d.qd.data(), d.kd.data(), d.vd.data(), d.doc(), o2.data(),
                                  l2.data());
    EXPECT_LT(olmo::testing::max_scaled_err(out, o2, 1e-12, 1e-14), 1.0);
    EXPECT_LT(olmo::testing::max_scaled_err(lse, l2, 1e-12, 1e-14), 1.0);
    attention_backward_bf16_ref<double>(s, d.qd.data(), d.kd.data(), d.vd.data(), d.doc(),
                                        out.data(), lse.data(), d.gd.data(), ana.data(),
                                        ana.data() + nq, ana.data() + nq + nk, false);
    EXPECT_LT(olmo::testing::max_scaled_err(ana, num, 1e-6, 1e-8), 1.0);
  }
}

TEST(AttentionBf16, DeterministicAcrossRunsAndThreadCounts) {
  NEED_NATIVE_BF16();
  const Case c{{2, 150, 4, 2, 64, 48}, true};
  const Data d = make_data(c, 7);
  auto all = [&](int threads) {
    omp_set_num_threads(threads);
    const Result r = run(c, d, attention_forward_bf16, attention_backward_bf16);
    std::vector<float> v = r.o;
    for (auto* x : {&r.l, &r.dq, &r.dk, &r.dv}) v.insert(v.end(), x->begin(), x->end());
    return v;
  };
  const int nt = omp_get_max_threads();
  const auto a = all(2), b = all(2), one = all(1), three = all(3);
  omp_set_num_threads(nt);
  EXPECT_TRUE(a == b);
  EXPECT_TRUE(a == one);
  EXPECT_TRUE(a == three);
}

// Without VDPBF16PS in use (another CPU, OLMO_ISA below avx512, OLMO_BF16=0) the entry points run
// the exact emulation (attention_bf16_emu.cpp): the same bits as the native kernels on every
// path this CPU can run (avx512 native; avx512 with set_bf16_native_override(0), avx2, scalar
// emulated) and 1 / 3 threads. Shapes: ragged T (edge tiles, an odd last query row), hd not a
// multiple of 16 (padded pairs), GQA, windows, documents.
TEST(AttentionBf16, EmulationIsTheNativeKernelsBitForBit) {
  olmo::testing::IsaGuard guard;
  struct NativeReset {
    ~NativeReset() { set_bf16_native_override(-1); }
  } reset;
  const int nt0 = omp_get_max_threads();
  for (const Case& c : {Case{{1, 130, 4, 2, 64, 0}, true}, Case{{2, 77, 2, 2, 24, 0}, false},
                        Case{{1, 200, 3, 1, 40, 50}, false}, Case{{1, 65, 2, 1, 16, 0}, true}}) {
    SCOPED_TRACE(name(c));
    const Data d = make_data(c, 21);
    Result first;
    std::string first_at;
    for (olmo::Isa isa : olmo::testing::isas()) {
      for (int native : {0, 1}) {
        if (native && isa != olmo::Isa::avx512) continue;
        olmo::set_isa_override(isa);
        set_bf16_native_override(native ? -1 : 0);
        if (native && !attention_bf16_native()) {
          olmo::testing::not_run("the native bf16 attention", "this CPU lacks AVX512_BF16");
          continue;
        }
        EXPECT_EQ(attention_bf16_native(), bool(native));
        for (int threads : {1, 3}) {
          omp_set_num_threads(threads);
          const Result r = run(c, d, attention_forward_bf16, attention_backward_bf16);
          const std::string at = olmo::cat(olmo::isa_name(isa), native ? " native" : " emulated",
                                           " x", threads);
          if (first_at.empty()) {
            first = r, first_at = at;
            continue;
          }
          auto same = [](const std::vector<float>& x, const std::vector<float>& y) {
            return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * 4) == 0;
          };
          EXPECT_TRUE(same(r.o, first.o) && same(r.l, first.l)) << "forward: " << at << " vs "
                                                                 << first_at;
          EXPECT_TRUE(same(r.dq, first.dq) && same(r.dk, first.dk) && same(r.dv, first.dv))
              << "backward: " << at << " vs " << first_at;
        }
      }
    }
  }
  omp_set_num_threads(nt0);
}

// bf16_mixed's choice (attention_bf16_chosen) is a function of the configuration, never of
// timing: the bf16 kernels with or without native bf16, the test override over the environment.
TEST(AttentionBf16, ChoiceIsConfigurationOnly) {
  struct Reset {
    ~Reset() { set_attention_bf16_override(-1); }
  } reset;
  for (const auto& mode : olmo::testing::bf16_modes()) {  // with and without native bf16
    olmo::testing::Bf16ModeGuard guard(mode);
    SCOPED_TRACE(mode.name);
    EXPECT_EQ(attention_bf16_native(), mode.native);
    set_attention_bf16_override(0);
    EXPECT_FALSE(attention_bf16_chosen());
    set_attention_bf16_override(1);
    EXPECT_TRUE(attention_bf16_chosen());
    EXPECT_NE(attention_bf16_why().find("test override"), std::string::npos);
    set_attention_bf16_override(-1);
  }
  const std::string why = attention_bf16_why();  // env switch or the default, once per process
  EXPECT_EQ(why.find("attention (bf16_mixed): "), 0u) << why;
  EXPECT_EQ(why.find("probe"), std::string::npos) << why;
  const char* e = std::getenv("OLMO_ATTN_BF16");
  EXPECT_EQ(attention_bf16_chosen(), !(e && std::string(e) == "0"));
}
