// RoPE: table against the HF formula computed independently here, fast path under each ISA vs
// the double reference, backward = transpose (gradient check), row_stride, bad arguments; YaRN
// correction range (spec 2.4 values), fp32 inverse frequencies vs the double formula, the
// scaled table, bad YaRN parameters. (Tables vs OLMo-core / transformers: tests/model/yarn_*.)
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/cpu.h"
#include "core/error.h"
#include "kernels/isa_util.h"
#include "kernels/gradcheck.h"
#include "kernels/rope.h"

using namespace olmo::kernels;
using olmo::testing::randn;
using olmo::testing::rel_l2;
using olmo::testing::to;

using olmo::testing::isas;
using olmo::testing::IsaGuard;

namespace {
}  // namespace

TEST(Rope, TableMatchesFormula) {
  auto t = rope_table(300, 64, 500000.0);
  ASSERT_EQ(t.cos.size(), 300u * 32);
  // position 0: cos 1, sin 0; j = 0: angle = p exactly.
  for (int j = 0; j < 32; ++j) {
    EXPECT_EQ(t.cos[j], 1.0f);
    EXPECT_EQ(t.sin[j], 0.0f);
  }
  EXPECT_NEAR(t.cos[299 * 32], std::cos(299.0), 1e-6);
  // inv_freq[j] = 500000^(-2j/64) in double; fp32 rounding of the angle limits agreement.
  for (int p : {1, 17, 299})
    for (int j : {1, 5, 31}) {
      double a = p * std::pow(500000.0, -2.0 * j / 64);
      EXPECT_NEAR(t.sin[p * 32 + j], std::sin(a), 2e-5 * (1 + std::fabs(a))) << p << " " << j;
      EXPECT_NEAR(t.cos[p * 32 + j], std::cos(a), 2e-5 * (1 + std::fabs(a))) << p << " " << j;
    }
}

TEST(Rope, FastMatchesReferenceUnderEachIsa) {
  IsaGuard g;
  for (int64_t hd : {2, 6, 34, 64, 128}) {
    const int64_t B = 2, T = 9, H = 3;
    auto tab = rope_table(16, hd, 10000.0);
    auto x = randn(B * T * H * hd, hd);
    for (double sign : {1.0, -1.0}) {
      auto ref = x;
      rope_ref(ref.data(), B, T, H, hd, tab, sign);
      for (auto isa : isas()) {
        olmo::set_isa_override(isa);
        auto xf = to<float>(x);
        if (sign > 0) rope_forward(xf.data(), B, T, H, hd, tab);
        else rope_backward(xf.data(), B, T, H, hd, tab);
        EXPECT_LT(rel_l2(xf, ref), 1e-6) << olmo::isa_name(isa) << " hd=" << hd;
      }
    }
  }
}

TEST(Rope, BackwardIsTransposeGradientCheck) {
  const int64_t B = 1, T = 4, H = 2, hd = 6;
  auto tab = rope_table(8, hd, 100.0);
  auto x = randn(B * T * H * hd, 3), R = randn(B * T * H * hd, 4);
  auto loss = [&](const std::vector<double>& v) {
    auto y = v;
    rope_ref(y.data(), B, T, H, hd, tab, 1.0);
    double s = 0;
    for (size_t i = 0; i < y.size(); ++i) s += y[i] * R[i];
    return s;
  };
  auto num = olmo::testing::numeric_grad(loss, x);
  auto an = R;
  rope_ref(an.data(), B, T, H, hd, tab, -1.0);
  EXPECT_LT(olmo::testing::max_scaled_err(an, num, 1e-6, 1e-8), 1.0);
  // And the fast backward agrees with the double transpose.
  auto Rf = to<float>(R);
  rope_backward(Rf.data(), B, T, H, hd, tab);
  EXPECT_LT(rel_l2(Rf, an), 1e-6);
}

TEST(Rope, RowStrideSkipsOtherColumns) {
  const int64_t B = 1, T = 5, H = 2, hd = 8, stride = 3 * H * hd;
  auto tab = rope_table(5, hd, 500000.0);
  auto buf = to<float>(randn(T * stride, 5));
  auto orig = buf;
  rope_forward(buf.data() + H * hd, B, T, H, hd, tab, stride);  // rotate the middle block
  std::vector<double> mid(T * H * hd);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < H * hd; ++i) mid[t * H * hd + i] = orig[t * stride + H * hd + i];
  rope_ref(mid.data(), B, T, H, hd, tab, 1.0);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < H * hd; ++i) {
      EXPECT_EQ(buf[t * stride + i], orig[t * stride + i]);
      EXPECT_NEAR(buf[t * stride + H * hd + i], mid[t * H * hd + i], 1e-5);
      EXPECT_EQ(buf[t * stride + 2 * H * hd + i], orig[t * stride + 2 * H * hd + i]);
    }
}

TEST(Rope, BadArgumentsThrow) {
  EXPECT_THROW(rope_table(10, 7, 1e4), olmo::Error);
  EXPECT_THROW(rope_table(0, 8, 1e4), olmo::Error);
  auto tab = rope_table(4, 8, 1e4);
  std::vector<float> x(5 * 8);
  EXPECT_THROW(rope_forward(x.data(), 1, 5, 1, 8, tab), olmo::Error);  // T > max_pos
  EXPECT_THROW(rope_forward(x.data(), 1, 2, 1, 4, tab), olmo::Error);  // hd mismatch
}

// ----------------------------------------------------------------------------------- YaRN

TEST(Yarn, Olmo3CorrectionRangeAndFactor) {
  // Spec 2.4: hd 128, theta 5e5, factor 8, betas 32/1, old context 8192 -> low 18, high 35,
  // m = 0.1 ln 8 + 1.
  YarnParams y{8, 32, 1, 8192, 0};
  for (auto f : {YarnFormula::olmo_core, YarnFormula::hf}) {
    YarnRange r = yarn_correction_range(128, 500000.0, y, f);
    EXPECT_EQ(r.low, 18);
    EXPECT_EQ(r.high, 35);
  }
  EXPECT_DOUBLE_EQ(yarn_attention_factor(y), 1.2079441541679836);
  y.attention_factor = 1.5;
  EXPECT_EQ(yarn_attention_factor(y), 1.5);
}

TEST(Yarn, ClampDiffersBetweenLibraries) {
  // A long old context relative to theta pushes ceil(d(beta_slow)) past hd/2 - 1: OLMo-core
  // clamps to hd/2 - 1, transformers to hd - 1.
  YarnParams y{4, 32, 1, 1 << 20, 0};
  YarnRange a = yarn_correction_range(16, 10000.0, y, YarnFormula::olmo_core);
  YarnRange b = yarn_correction_range(16, 10000.0, y, YarnFormula::hf);
  EXPECT_EQ(a.high, 7);
  EXPECT_GT(b.high, 7);
}

TEST(Yarn, InvFreqMatchesDoubleReference) {
  for (int64_t hd : {16, 64, 128})
    for (double theta : {10000.0, 500000.0})
      for (int64_t old : {64, 8192})
        for (auto f : {YarnFormula::olmo_core, YarnFormula::hf}) {
          YarnParams y{8, 32, 1, old, 0};
          auto fast = yarn_inv_freq(hd, theta, y, f);
          auto ref = yarn_inv_freq_ref(hd, theta, y, f);
          ASSERT_EQ(fast.size(), ref.size());
          YarnRange r = yarn_correction_range(hd, theta, y, f);
          for (size_t j = 0; j < ref.size(); ++j) {
            EXPECT_NEAR(fast[j], ref[j], 4e-7 * ref[j]) << hd << " " << theta << " " << j;
            double base = std::pow(theta, -2.0 * double(j) / double(hd));
            if (int64_t(j) <= r.low) {
              EXPECT_NEAR(ref[j], base, 1e-15 * base);  // kept
            }
            if (int64_t(j) >= r.high) {
              EXPECT_NEAR(ref[j], base / 8, 1e-15 * base);  // fully interpolated
            }
          }
        }
}

TEST(Yarn, TableIsScaledRotation) {
  YarnParams y{8, 32, 1, 64, 0};
  const double m = yarn_attention_factor(y);
  auto inv = yarn_inv_freq(32, 500000.0, y, YarnFormula::olmo_core);
  auto t = rope_table(300, 32, 500000.0, y, YarnFormula::olmo_core);
  for (int p : {0, 1, 63, 64, 299})
    for (int j = 0; j < 16; ++j) {
      double a = double(float(p) * inv[j]);
      EXPECT_NEAR(t.cos[p * 16 + j], m * std::cos(a), 3e-7) << p << " " << j;
      EXPECT_NEAR(t.sin[p * 16 + j], m * std::sin(a), 3e-7) << p << " " << j;
      // cos^2 + sin^2 = m^2: q.k logits scale by m^2.
      double c = t.cos[p * 16 + j], s = t.sin[p * 16 + j];
      EXPECT_NEAR(c * c + s * s, m * m, 1e-6);
    }
  // The rotation kernels use the scaled table as is: fast path == reference under every ISA.
  IsaGuard g;
  const int64_t B = 2, T = 300, H = 2, hd = 32;
  auto x = randn(B * T * H * hd, 7);
  auto ref = x;
  rope_ref(ref.data(), B, T, H, hd, t, 1.0);
  for (auto isa : isas()) {
    olmo::set_isa_override(isa);
    auto xf = to<float>(x);
    rope_forward(xf.data(), B, T, H, hd, t);
    EXPECT_LT(rel_l2(xf, ref), 1e-6) << olmo::isa_name(isa);
  }
}

TEST(Yarn, BadParamsThrow) {
  auto msg = [](YarnParams y) {
    try {
      rope_table(16, 16, 500000.0, y, YarnFormula::olmo_core);
    } catch (const olmo::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(msg({1.0, 32, 1, 64, 0}).find("factor must be > 1"), std::string::npos);
  EXPECT_NE(msg({0.5, 32, 1, 64, 0}).find("factor must be > 1"), std::string::npos);
  EXPECT_NE(msg({8, 32, 1, 0, 0}).find("old context length must be positive"),
            std::string::npos);
  EXPECT_NE(msg({8, 1, 32, 64, 0}).find("beta_fast > beta_slow"), std::string::npos);
}
