// core/det_math accuracy against an independent reference: x87 long double (64-bit mantissa)
// sinl / cosl / expl / logl / powl, over millions of seeded random arguments in each range the
// callers use, plus edge cases. Per range: the largest error in double ulps (the contract: <= 1),
// the number of results that are not the long double result rounded to double where that
// rounding is decided (the long double more than 2^-9 ulp from a double midpoint: 0 expected, the
// functions being within 2^-60 relative before their last rounding), and, for the values the
// callers round to float, equality with the long double result rounded to float except where
// that value lies within 2^-40 relative of a float midpoint (counted and printed).
#include "core/det_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <random>
#include <string>

#include "core/error.h"

namespace olmo::det {
namespace {

using ld = long double;
using Gen = std::function<double(std::mt19937_64&)>;

// Uniform in [0, 1) with 53 random bits.
double unit(std::mt19937_64& g) { return double(g() >> 11) * 0x1p-53; }
Gen uniform(double a, double b) {
  return [=](std::mt19937_64& g) { return a + (b - a) * unit(g); };
}
// |x| log-uniform in [2^lo, 2^hi), random sign when `sign`.
Gen log_uniform(double lo, double hi, bool sign = false) {
  return [=](std::mt19937_64& g) {
    const double x = std::ldexp(1.0 + unit(g), int(std::floor(lo + (hi - lo) * unit(g))));
    return sign && (g() & 1) ? -x : x;
  };
}
// The same, as a float (the RoPE angles are fp32 values).
Gen as_float(Gen f) {
  return [=](std::mt19937_64& g) { return double(float(f(g))); };
}

// |got - ref| in ulps of the double at ref.
ld ulps(double got, ld ref) {
  if (ref == 0) return got == 0 ? 0 : std::numeric_limits<ld>::infinity();
  int e = 0;
  std::frexp(ref, &e);  // |ref| = m 2^e, m in [1/2, 1)
  return std::fabs(ld(got) - ref) / std::ldexp(ld(1), std::max(e - 53, -1074));
}
// Where ref lies from the nearest float midpoint, relative to |ref| (the float rounding of ref is
// in doubt when this is tiny).
ld float_midpoint_distance(ld ref) {
  const float f = float(ref);
  const float nb = std::nextafter(f, ref > ld(f) ? std::numeric_limits<float>::infinity()
                                                 : -std::numeric_limits<float>::infinity());
  const ld mid = (ld(f) + ld(nb)) / 2;
  return std::fabs(ref - mid) / std::fabs(ref);
}

struct Stats {
  ld max_ulp = 0;
  double worst = 0;
  long n = 0, not_cr = 0, undecided = 0;           // double results
  long float_diff = 0, float_near_mid = 0;         // float results (when checked)
};

// f against ref on n arguments from gen (seed fixed); floats: also the float-rounded check.
Stats measure(const char* name, const std::function<double(double)>& f,
              const std::function<ld(double)>& ref, const Gen& gen, long n, bool floats,
              uint64_t seed = 46) {
  std::mt19937_64 g(seed);
  Stats s;
  for (long i = 0; i < n; ++i) {
    const double x = gen(g);
    const double y = f(x);
    const ld r = ref(x);
    const ld e = ulps(y, r);
    if (!(e <= s.max_ulp)) {
      s.max_ulp = e;
      s.worst = x;
    }
    ++s.n;
    if (y != double(r)) {
      if (std::fabs(e - ld(0.5)) < ld(0x1p-9)) ++s.undecided;
      else ++s.not_cr;
    }
    if (floats && float(y) != float(r)) {
      if (float_midpoint_distance(r) < ld(0x1p-40)) ++s.float_near_mid;
      else ++s.float_diff;
    }
  }
  std::printf("%-34s n %ld: max %.9Lf ulp (x = %a), not correctly rounded %ld (undecided by long "
              "double %ld)", name, s.n, s.max_ulp, s.worst, s.not_cr, s.undecided);
  if (floats)
    std::printf("; as float: differ %ld, within 2^-40 of a float midpoint %ld", s.float_diff,
                s.float_near_mid);
  std::printf("\n");
  return s;
}

void expect_accurate(const Stats& s) {
  EXPECT_LE(s.max_ulp, 1.0L) << "worst x = " << s.worst;  // the contract
  EXPECT_EQ(s.not_cr, 0) << "worst x = " << s.worst;      // the measured accuracy
  EXPECT_EQ(s.float_diff, 0);
}

constexpr long kN = 2000000;

ld ref_sin(double x) { return sinl(x); }
ld ref_cos(double x) { return cosl(x); }
ld ref_log(double x) { return logl(x); }
ld ref_exp(double x) { return expl(x); }

TEST(DetMath, SinCosRopeAngles) {
  // fp32 angles pos * inv_freq, |a| <= max_pos * 1 rad: every binade from 2^-20 to 2^20.
  const Gen a = as_float(log_uniform(-20, 20));
  expect_accurate(measure("sin, fp32 angles |a| < 2^20", sin, ref_sin, a, kN, true));
  expect_accurate(measure("cos, fp32 angles |a| < 2^20", cos, ref_cos, a, kN, true));
  const Gen big = as_float(uniform(0, 0x1p20));  // most table entries: large angles
  expect_accurate(measure("sin, fp32 angles in [0, 2^20]", sin, ref_sin, big, kN, true, 7));
  expect_accurate(measure("cos, fp32 angles in [0, 2^20]", cos, ref_cos, big, kN, true, 7));
}

TEST(DetMath, SinCosDoubles) {
  const Gen x = log_uniform(-30, 30, true);
  expect_accurate(measure("sin, |x| in [2^-30, 2^30]", sin, ref_sin, x, kN / 2, false));
  expect_accurate(measure("cos, |x| in [2^-30, 2^30]", cos, ref_cos, x, kN / 2, false));
  // The schedule: cos(pi c / t) on [0, pi]; the initialisation: cos(2 pi u), u in (0, 1].
  expect_accurate(measure("cos, [0, pi] (LR schedule)", cos, ref_cos, uniform(0, M_PI), kN, false));
  expect_accurate(measure("cos, 2 pi u (initialisation)", cos, ref_cos,
                          [](std::mt19937_64& g) { return 2.0 * M_PI * (unit(g) + 0x1p-53); },
                          kN / 2, false));
  // Near multiples of pi/2, where the reduction cancels: k pi/2 (rounded) moved a few ulps.
  const Gen near = [](std::mt19937_64& g) {
    const double k = std::floor(unit(g) * 6.8e8);
    return std::nextafter(k * M_PI_2, 0.0) + double(int(g() % 9) - 4) * 0x1p-52 * (k * M_PI_2);
  };
  expect_accurate(measure("sin, near k pi/2", sin, ref_sin, near, kN / 4, false));
  expect_accurate(measure("cos, near k pi/2", cos, ref_cos, near, kN / 4, false));
}

TEST(DetMath, SinCosEdges) {
  // The doubles below 2^30 closest to a multiple of pi/2 (continued fractions of pi/2: |r| =
  // 2^-60.5 at 45.55, 2^-59.0 at 2^23 1.72, ...), and small, boundary and signed values.
  const double xs[] = {0x1.6c6cbc45dc8dep+5, 0x1.b951f1572eba5p+23, 0x1.b951f1572eba5p+27,
                       0x1.39c6fd67805a7p+18, 0x1.9eb7148f354d6p+20, M_PI_2, M_PI, 2 * M_PI,
                       M_PI_4, std::nextafter(M_PI_4, 1.0), 1e-300, 0x1p-1074, 0x1p-26, 1.0,
                       0x1p30, 1e9, 3.0e5, 65535.0};
  for (double x0 : xs)
    for (double x : {x0, -x0}) {
      EXPECT_LE(ulps(sin(x), sinl(x)), 0.5L + 0x1p-9L) << "sin " << std::hexfloat << x;
      EXPECT_LE(ulps(cos(x), cosl(x)), 0.5L + 0x1p-9L) << "cos " << std::hexfloat << x;
    }
  EXPECT_TRUE(std::signbit(sin(-0.0)) && sin(0.0) == 0 && !std::signbit(sin(0.0)));
  EXPECT_EQ(cos(0.0), 1.0);
  EXPECT_TRUE(std::isnan(sin(std::numeric_limits<double>::infinity())));
  EXPECT_TRUE(std::isnan(cos(-std::numeric_limits<double>::infinity())));
  EXPECT_TRUE(std::isnan(cos(std::numeric_limits<double>::quiet_NaN())));
  EXPECT_THROW(sin(std::nextafter(kTrigMaxArg, 1e300)), Error);
  EXPECT_THROW(cos(-0x1p31), Error);
}

TEST(DetMath, Log) {
  // The initialisation's log u, u = (k + 1) 2^-53 in (0, 1]; RoPE's log theta and YaRN's
  // log(old_ctx / (2 pi n)); every binade, subnormals included.
  expect_accurate(measure("log, (0, 1] (initialisation)", log, ref_log,
                          [](std::mt19937_64& g) { return unit(g) + 0x1p-53; }, kN, false));
  expect_accurate(measure("log, [2^-30, 2^30]", log, ref_log, log_uniform(-30, 30), kN, false));
  expect_accurate(measure("log, every binade", log, ref_log, log_uniform(-1074, 1024), kN,
                          false));
  expect_accurate(measure("log, near 1", log, ref_log, uniform(0.999, 1.001), kN / 4, false));
  EXPECT_EQ(log(1.0), 0.0);
  EXPECT_EQ(log(0.0), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(log(-1.0)));
  EXPECT_EQ(log(std::numeric_limits<double>::infinity()), std::numeric_limits<double>::infinity());
  EXPECT_LE(ulps(log(0x1p-1074), logl(0x1p-1074L)), 0.5L);
  EXPECT_LE(ulps(log(std::numeric_limits<double>::max()), logl(std::numeric_limits<double>::max())),
            0.5L);
}

TEST(DetMath, Exp) {
  expect_accurate(measure("exp, [-708, 709.7]", exp, ref_exp, uniform(-708, 709.7), kN, false));
  expect_accurate(measure("exp, [-1, 1]", exp, ref_exp, uniform(-1, 1), kN / 4, false));
  EXPECT_EQ(exp(0.0), 1.0);
  EXPECT_EQ(exp(710.0), std::numeric_limits<double>::infinity());
  EXPECT_EQ(exp(-746.0), 0.0);
  EXPECT_LE(ulps(exp(709.78), expl(ld(709.78))), 0.5L + 0x1p-9L);
  EXPECT_LE(ulps(exp(-740.0), expl(ld(-740.0))), 1.0L);  // subnormal result: rounded twice
}

TEST(DetMath, Pow) {
  // RoPE: theta^(2j/hd) with the fp32 exponent, for every preset theta and head_dim.
  long n = 0;
  for (double theta : {1e4, 5e5, 1e6, 8e6})
    for (int hd = 2; hd <= 512; hd += 2)
      for (int j = 0; j < hd / 2; ++j) {
        const double e = double(float(2 * j) / float(hd));
        const ld r = powl(ld(theta), ld(e));
        const double y = pow(theta, e);
        EXPECT_LE(ulps(y, r), 0.5L + 0x1p-9L) << theta << "^" << e;
        if (float_midpoint_distance(r) >= ld(0x1p-40)) {
          EXPECT_EQ(float(y), float(r));
        }
        ++n;
      }
  std::printf("pow, theta^(2j/hd): %ld values\n", n);
  std::mt19937_64 g(5);
  Stats s;
  for (long i = 0; i < kN / 2; ++i) {
    const double x = log_uniform(-20, 24)(g), y = uniform(-1, 1)(g);
    const ld r = powl(ld(x), ld(y));
    const ld e = ulps(pow(x, y), r);
    s.max_ulp = std::max(s.max_ulp, e);
    if (pow(x, y) != double(r) && std::fabs(e - ld(0.5)) >= ld(0x1p-9)) ++s.not_cr;
  }
  std::printf("pow, x in [2^-20, 2^24], y in [-1, 1]: max %.9Lf ulp, not correctly rounded %ld\n",
              s.max_ulp, s.not_cr);
  expect_accurate(s);
}

TEST(DetMath, PowBiasCorrections) {
  // AdamW: beta^(s+1) for the fp32 beta and fp32 step, steps 1..2,000,000, as double and as the
  // float det::powf returns. Results below the double range are rounded twice (within 1 ulp);
  // below every float (2^-150) the rest of the steps must give 0.
  for (double beta : {0.9, 0.95, 0.98, 0.99, 0.999}) {
    const float b = float(beta);
    Stats s;
    long zeros = 0, sub = 0, first_zero = 0;
    for (long k = 1; k <= 2000000; ++k) {
      if (zeros > 0) {
        zeros += powf(b, float(k)) == 0.0f;
        continue;
      }
      const ld r = powl(ld(b), ld(k));
      const double y = pow(double(b), double(k));
      const ld e = ulps(y, r);
      if (r < ld(0x1p-1022)) {
        ++sub;
        EXPECT_LE(e, 1.0L) << beta << "^" << k;
      } else {
        if (e > s.max_ulp) {
          s.max_ulp = e;
          s.worst = double(k);
        }
        if (y != double(r) && std::fabs(e - ld(0.5)) >= ld(0x1p-9)) ++s.not_cr;
      }
      if (powf(b, float(k)) != float(r)) {
        if (float_midpoint_distance(r) < ld(0x1p-40)) ++s.float_near_mid;
        else ++s.float_diff;
      }
      if (r < ld(0x1p-151)) {
        zeros = 1;
        first_zero = k;
      }
    }
    EXPECT_EQ(zeros, 2000000 - first_zero + 1) << beta;
    std::printf("powf(%g, s), s = 1..2e6: max %.9Lf ulp in double (s = %g), not correctly "
                "rounded %ld, %ld subnormal doubles; as float: differ %ld, within 2^-40 of a "
                "float midpoint %ld; 0 at the last %ld steps\n",
                beta, s.max_ulp, s.worst, s.not_cr, sub, s.float_diff, s.float_near_mid, zeros);
    expect_accurate(s);
  }
  EXPECT_EQ(powf(0.0f, 3.0f), 0.0f);
  EXPECT_EQ(powf(1.0f, 1e6f), 1.0f);
  EXPECT_EQ(powf(0.999f, 2e6f), 0.0f);
}

TEST(DetMath, PowSpecialValues) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(pow(2.0, 10.0), 1024.0);
  EXPECT_EQ(pow(-2.0, 3.0), -8.0);
  EXPECT_EQ(pow(-2.0, 2.0), 4.0);
  EXPECT_TRUE(std::isnan(pow(-2.0, 0.5)));
  EXPECT_EQ(pow(0.0, 2.0), 0.0);
  EXPECT_EQ(pow(0.0, -1.0), inf);
  EXPECT_EQ(pow(inf, -1.0), 0.0);
  EXPECT_EQ(pow(0.5, inf), 0.0);
  EXPECT_EQ(pow(2.0, inf), inf);
  EXPECT_EQ(pow(7.0, 0.0), 1.0);
  EXPECT_EQ(pow(10.0, 400.0), inf);
  EXPECT_EQ(pow(10.0, -400.0), 0.0);
  EXPECT_TRUE(std::isnan(pow(std::nan(""), 2.0)));
}

}  // namespace
}  // namespace olmo::det
