// The callers of core/det_math against what glibc's libm gives for the same expressions (their
// values before they moved to det_math), over the ranges they use: RoPE inverse frequencies,
// YaRN ranges and factors and the cos/sin tables of the presets (kernels/rope), AdamW's bias
// corrections (optim/adamw), the initialisation's Box-Muller draws (model/olmo3, its expression
// written out here), and what det::cos would change in the cosine LR schedules of the OLMo 3 7B
// stage 1 (optim/schedule keeps libm's cos for bit parity with OLMo-core's math.cos: this test
// checks that it does and counts the steps whose LR det::cos would move).
// A value may differ from glibc's only where det_math's is the long double (x87, 64-bit
// mantissa) value rounded as the caller rounds it and glibc's is not: each such place is
// printed with both values; a difference where det_math is the one off fails the test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "core/det_math.h"
#include "kernels/rope.h"
#include "optim/schedule.h"

namespace olmo {
namespace {

using ld = long double;

// Outcome of one comparison with glibc: same value; differs, det_math right (the long double
// value) and glibc off; differs and the long double cannot tell (within 2^-40 relative of a
// rounding boundary); differs with det_math off (a failure).
struct Tally {
  long same = 0, glibc_off = 0, undecided = 0, det_off = 0;
  int printed = 0;
  template <class T>
  void add(T det, T glibc, T ref, bool decided, const char* what, double where) {
    if (det == glibc) {
      ++same;
      return;
    }
    const char* verdict = det == ref ? "glibc off" : !decided ? "undecided" : "det_math OFF";
    if (det == ref) ++glibc_off;
    else if (!decided) ++undecided;
    else ++det_off;
    if (printed++ < 12)
      std::printf("    %s at %.17g: det_math %a, glibc %a, long double %a (%s)\n", what, where,
                  double(det), double(glibc), double(ref), verdict);
  }
  // Prints the counts; a difference with det_math off fails the test.
  void report(const char* name) const {
    std::printf("%-44s same %ld, differ: glibc off %ld, undecided %ld, det_math off %ld\n", name,
                same, glibc_off, undecided, det_off);
    EXPECT_EQ(det_off, 0) << name;
  }
};

// Whether rounding r to float is decided (r farther than 2^-40 relative from a float midpoint).
bool float_decided(ld r) {
  const float f = float(r);
  const float nb = std::nextafter(f, r > ld(f) ? std::numeric_limits<float>::infinity()
                                               : -std::numeric_limits<float>::infinity());
  return std::fabs(r - (ld(f) + ld(nb)) / 2) >= std::fabs(r) * ld(0x1p-40);
}
// The same for rounding to double (2^-9 ulp: the long double's own error is below 2^-10 ulp).
bool double_decided(ld r) {
  const double d = double(r);
  const double nb = std::nextafter(d, r > ld(d) ? std::numeric_limits<double>::infinity()
                                                : -std::numeric_limits<double>::infinity());
  return std::fabs(r - (ld(d) + ld(nb)) / 2) >= std::fabs(ld(nb) - ld(d)) * ld(0x1p-9);
}

struct RopeCase {
  const char* name;
  int64_t max_pos, head_dim;
  double theta;
  bool yarn;
  kernels::YarnParams y;
  kernels::YarnFormula f;
};

TEST(DetMathCallers, RopeTables) {
  const kernels::YarnParams none;
  kernels::YarnParams y7b;  // olmo3-7b stage 3: factor 8 over the 8192 context
  y7b.factor = 8;
  y7b.old_context_len = 8192;
  kernels::YarnParams ydemo;  // demo stage 3: factor 4 over 256
  ydemo.factor = 4;
  ydemo.old_context_len = 256;
  const auto oc = kernels::YarnFormula::olmo_core, hf = kernels::YarnFormula::hf;
  // Tables are prefixes of longer ones: each (head_dim, theta, YaRN) at its longest max_pos.
  const RopeCase cases[] = {
      {"olmo3-7b/1b/32b (hd 128), 64k positions", 65536, 128, 5e5, false, none, oc},
      {"olmo3-7b stage 3 YaRN x8 (OLMo-core)", 65536, 128, 5e5, true, y7b, oc},
      {"olmo3-7b stage 3 YaRN x8 (HF)", 65536, 128, 5e5, true, y7b, hf},
      {"olmo3-190m / demo (hd 64)", 8192, 64, 5e5, false, none, oc},
      {"demo stage 3 YaRN x4 (hd 64)", 2048, 64, 5e5, true, ydemo, oc},
      {"olmo3-60m (hd 48)", 8192, 48, 5e5, false, none, oc},
      {"olmo3-30m (hd 32)", 8192, 32, 5e5, false, none, oc},
      {"olmo3-14m / tiny / golden (hd 16)", 8192, 16, 5e5, false, none, oc},
      {"theta 1e4 (hd 128)", 8192, 128, 1e4, false, none, oc},
  };
  for (const RopeCase& c : cases) {
    std::printf("%s:\n", c.name);
    Tally pw, tab;
    // Inverse frequencies: the fp32 power theta^(2j/hd) (glibc: pow in double, then fp32).
    const std::vector<float> inv0 = kernels::rope_inv_freq(c.head_dim, c.theta);
    for (int64_t j = 0; j < c.head_dim / 2; ++j) {
      const double e = double(float(2 * j) / float(c.head_dim));
      const ld r = powl(ld(c.theta), ld(e));
      pw.add(1.0f / float(det::pow(c.theta, e)), 1.0f / float(std::pow(c.theta, e)),
             1.0f / float(r), float_decided(r), "theta^e", e);
      EXPECT_EQ(inv0[size_t(j)], 1.0f / float(det::pow(c.theta, e)));
    }
    pw.report("  inverse frequencies");
    float scale = 1.0f;
    std::vector<float> inv = inv0;
    if (c.yarn) {
      // The correction range (floor / ceil of a ratio of logs) and the attention factor.
      const kernels::YarnRange got = kernels::yarn_correction_range(c.head_dim, c.theta, c.y, c.f);
      auto dim = [&](double n_rot) {
        return (double(c.head_dim) * std::log(double(c.y.old_context_len) / (n_rot * 2.0 * M_PI))) /
               (2.0 * std::log(c.theta));
      };
      const int64_t top = c.f == oc ? c.head_dim / 2 - 1 : c.head_dim - 1;
      EXPECT_EQ(got.low, std::max<int64_t>(int64_t(std::floor(dim(c.y.beta_fast))), 0));
      EXPECT_EQ(got.high, std::min<int64_t>(int64_t(std::ceil(dim(c.y.beta_slow))), top));
      scale = float(kernels::yarn_attention_factor(c.y));
      EXPECT_EQ(scale, float(0.1 * std::log(c.y.factor) + 1.0));
      inv = kernels::yarn_inv_freq(c.head_dim, c.theta, c.y, c.f);
    }
    const kernels::RopeTable t =
        c.yarn ? kernels::rope_table(c.max_pos, c.head_dim, c.theta, c.y, c.f)
               : kernels::rope_table(c.max_pos, c.head_dim, c.theta);
    const int64_t half = c.head_dim / 2;
    for (int64_t p = 0; p < c.max_pos; ++p)
      for (int64_t j = 0; j < half; ++j) {
        const float a = float(p) * inv[size_t(j)];
        const size_t i = size_t(p * half + j);
        const ld rc = cosl(ld(a)), rs = sinl(ld(a));
        tab.add(t.cos[i], float(std::cos(double(a))) * scale, float(rc) * scale,
                float_decided(rc), "cos", double(a));
        tab.add(t.sin[i], float(std::sin(double(a))) * scale, float(rs) * scale,
                float_decided(rs), "sin", double(a));
      }
    tab.report("  cos/sin tables");
  }
}

TEST(DetMathCallers, AdamWBiasCorrections) {
  // bc = 1 - powf(float(beta), s + 1) (adamw.cpp step_scalars and adamw_reference).
  for (double beta : {0.9, 0.95, 0.98, 0.99, 0.999}) {
    const float b = float(beta);
    Tally pw, bc;
    for (long k = 1; k <= 2000000; ++k) {
      const float s = float(k);
      const float d = det::powf(b, s), g = std::pow(b, s);
      const ld r = powl(ld(b), ld(s));
      pw.add(d, g, float(r), float_decided(r), "beta^s", double(k));
      bc.add(1.0f - d, 1.0f - g, 1.0f - float(r), float_decided(r), "1 - beta^s", double(k));
    }
    std::printf("beta %g, steps 1..2,000,000:\n", beta);
    pw.report("  powf(beta, s)");
    bc.report("  bias correction 1 - powf(beta, s)");
  }
}

TEST(DetMathCallers, CosineSchedules) {
  // OLMo 3 7B stage 1 part 1 (cos_with_warmup 2000, alpha_f 0.1, 1,192,093 steps) and part 2
  // (half_cos_with_warmup 597,046 over 1,668,931): every step's LR (double) with det::cos in
  // place of the libm cos that get_lr uses, and the two fp32 values AdamW takes from it
  // (float(lr) and float(lr * wd), wd 0.1).
  constexpr double kPi = 3.141592653589793;
  struct Case {
    const char* name;
    nlohmann::json cfg;
    int64_t t_max;
    bool half;
  } cases[] = {
      {"cos_with_warmup, 1,192,093 steps", {{"name", "cos_with_warmup"}, {"warmup", 2000},
                                            {"alpha_f", 0.1}}, 1192093, false},
      {"half_cos_with_warmup, 1,668,931 steps", {{"name", "half_cos_with_warmup"},
                                                 {"warmup", 597046}, {"alpha_f", 0.1}}, 1668931,
       true},
  };
  for (const Case& c : cases) {
    const auto sched = optim::make_schedule(optim::schedule_config_from_json(c.cfg));
    const int64_t w = c.cfg["warmup"].get<int64_t>();
    Tally cs, lr, lr32;
    for (double lr0 : {3e-4, 2.0712352850360292e-4}) {
      const double eta_min = lr0 * 0.1;
      for (int64_t step = w; step < c.t_max; ++step) {
        int64_t cc = step - w, tt = c.t_max - w;
        if (c.half) {
          cc += tt;
          tt *= 2;
        }
        const double arg = kPi * double(cc) / double(tt);
        const ld rc = cosl(ld(arg));
        const double got = eta_min + (lr0 - eta_min) * (1.0 + det::cos(arg)) / 2.0;
        const double glibc = eta_min + (lr0 - eta_min) * (1.0 + std::cos(arg)) / 2.0;
        EXPECT_EQ(sched->get_lr(lr0, step, c.t_max), glibc) << step;  // the expression above
        const double ref = eta_min + (lr0 - eta_min) * (1.0 + double(rc)) / 2.0;
        if (lr0 == 3e-4)
          cs.add(det::cos(arg), std::cos(arg), double(rc), double_decided(rc), "cos", arg);
        lr.add(got, glibc, ref, double_decided(rc), "lr", double(step));
        lr32.add(float(got), float(glibc), float(ref), double_decided(rc), "float(lr)",
                 double(step));
        lr32.add(float(got * 0.1), float(glibc * 0.1), float(ref * 0.1), double_decided(rc),
                 "float(lr * wd)", double(step));
      }
    }
    std::printf("%s (lr0 3e-4 and 2.07e-4):\n", c.name);
    cs.report("  cos (lr0 3e-4 steps)");
    lr.report("  lr (double)");
    lr32.report("  float(lr), float(lr * wd)");
  }
}

TEST(DetMathCallers, InitialisationDraws) {
  // Olmo3::init_weights_range: z = sqrt(-2 log u1) cos(2 pi u2), u in (0, 1] with 53 random bits,
  // rejected outside +-3, stored as float(0.02 z). 4,000,000 draws.
  std::mt19937_64 g(4646);
  Tally lg, cs, w, rej;
  for (long i = 0; i < 4000000; ++i) {
    const double u1 = (double(g() >> 11) + 1.0) * 0x1.0p-53;
    const double u2 = (double(g() >> 11) + 1.0) * 0x1.0p-53;
    const double a = 2.0 * M_PI * u2;
    const ld rl = logl(ld(u1)), rc = cosl(ld(a));
    const bool dec = double_decided(rl) && double_decided(rc);
    lg.add(det::log(u1), std::log(u1), double(rl), double_decided(rl), "log", u1);
    cs.add(det::cos(a), std::cos(a), double(rc), double_decided(rc), "cos", a);
    const double zd = std::sqrt(-2.0 * det::log(u1)) * det::cos(a);
    const double zg = std::sqrt(-2.0 * std::log(u1)) * std::cos(a);
    const double zr = std::sqrt(-2.0 * double(rl)) * double(rc);
    rej.add(int(std::fabs(zd) > 3.0), int(std::fabs(zg) > 3.0), int(std::fabs(zr) > 3.0), dec,
            "rejection", double(i));
    w.add(float(0.02 * zd), float(0.02 * zg), float(0.02 * zr), dec, "float(0.02 z)", double(i));
  }
  lg.report("log u1 (double)");
  cs.report("cos 2 pi u2 (double)");
  rej.report("rejection |z| > 3");
  w.report("weight float(0.02 z)");
}

}  // namespace
}  // namespace olmo
