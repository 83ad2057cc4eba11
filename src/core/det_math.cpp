// Deterministic exp, log, sin, cos, pow (see det_math.h for the contract, method and accuracy).
// Constants are hexadecimal doubles: each multi-part constant is the double nearest the value,
// then the double nearest what is left, and so on; each 1/n! and 1/n pair likewise (hi, lo).
#include "core/det_math.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/error.h"

namespace olmo::det {

namespace {

// ------------------------------------------------------------------ double-double arithmetic
// A value hi + lo with |lo| <= ulp(hi) / 2 (normalised) about 106 bits of precision.
struct DD {
  double hi, lo;
};

// Knuth's TwoSum: s + e == a + b exactly.
inline DD two_sum(double a, double b) {
  const double s = a + b, bb = s - a;
  return {s, (a - (s - bb)) + (b - bb)};
}
// Dekker's FastTwoSum, exact when a == 0 or exponent(a) >= exponent(b).
inline DD fast_two_sum(double a, double b) {
  const double s = a + b;
  return {s, b - (s - a)};
}
// p + e == a * b exactly: the FMA returns the product's rounding error.
inline DD two_prod(double a, double b) {
  const double p = a * b;
  return {p, std::fma(a, b, -p)};
}
// Sums and products accurate to about 2^-104 relative where the operands do not cancel.
inline DD add(DD a, DD b) {
  const DD s = two_sum(a.hi, b.hi);
  return fast_two_sum(s.hi, s.lo + (a.lo + b.lo));
}
inline DD mul(DD a, DD b) {
  const DD p = two_prod(a.hi, b.hi);
  return fast_two_sum(p.hi, p.lo + (a.hi * b.lo + a.lo * b.hi));
}

// head[0] + z (head[1] + ... + z (head[nh-1] + z tail(z))): tail(z) (coefficients tail[0..nt))
// by Horner in double on z.hi, then the head terms by Horner in double-double.
DD poly(DD z, const DD* head, int nh, const double* tail, int nt) {
  double t = tail[nt - 1];
  for (int i = nt - 2; i >= 0; --i) t = t * z.hi + tail[i];
  DD acc{t, 0.0};
  for (int i = nh - 1; i >= 0; --i) acc = add(mul(acc, z), head[i]);
  return acc;
}

// Nearest integer (ties to even) for |x| < 2^51: adding 1.5 * 2^52 leaves no fraction bits.
inline double round_int(double x) {
  constexpr double kShift = 0x1.8p52;
  return (x + kShift) - kShift;
}

// 2^k for -1022 <= k <= 1023.
inline double pow2(int k) { return std::bit_cast<double>(uint64_t(k + 1023) << 52); }

// ------------------------------------------------------------------------------ constants
constexpr double kPio2[3] = {0x1.921fb54442d18p+0, 0x1.1a62633145c07p-54, -0x1.f1976b7ed8fbcp-110};
constexpr double kTwoOverPi = 0x1.45f306dc9c883p-1;
constexpr double kLn2[3] = {0x1.62e42fefa39efp-1, 0x1.abc9e3b39803fp-56, 0x1.7b57a079a1934p-111};
constexpr double kInvLn2 = 0x1.71547652b82fep+0;
constexpr double kSqrt2 = 0x1.6a09e667f3bcdp+0;  // rounded up: sqrt(2) < kSqrt2

// e^r = sum r^n / n!: n = 0..6 in double-double, 7..18 in double.
constexpr DD kExpHead[7] = {{1.0, 0.0},
                            {1.0, 0.0},
                            {0x1p-1, 0.0},
                            {0x1.5555555555555p-3, 0x1.5555555555555p-57},
                            {0x1.5555555555555p-5, 0x1.5555555555555p-59},
                            {0x1.1111111111111p-7, 0x1.1111111111111p-63},
                            {0x1.6c16c16c16c17p-10, -0x1.f49f49f49f49fp-65}};
constexpr double kExpTail[12] = {0x1.a01a01a01a01ap-13, 0x1.a01a01a01a01ap-16,
                                 0x1.71de3a556c734p-19, 0x1.27e4fb7789f5cp-22,
                                 0x1.ae64567f544e4p-26, 0x1.1eed8eff8d898p-29,
                                 0x1.6124613a86d09p-33, 0x1.93974a8c07c9dp-37,
                                 0x1.ae7f3e733b81fp-41, 0x1.ae7f3e733b81fp-45,
                                 0x1.952c77030ad4ap-49, 0x1.6827863b97d97p-53};
// sin r = r + r z S(z), z = r^2, S = sum (-1)^n z^(n-1) / (2n+1)!: n = 1..4 in double-double,
// 5..11 in double.
constexpr DD kSinHead[4] = {{-0x1.5555555555555p-3, -0x1.5555555555555p-57},
                            {0x1.1111111111111p-7, 0x1.1111111111111p-63},
                            {-0x1.a01a01a01a01ap-13, -0x1.a01a01a01a01ap-73},
                            {0x1.71de3a556c734p-19, -0x1.c154f8ddc6c00p-73}};
constexpr double kSinTail[7] = {-0x1.ae64567f544e4p-26, 0x1.6124613a86d09p-33,
                                -0x1.ae7f3e733b81fp-41, 0x1.952c77030ad4ap-49,
                                -0x1.2f49b46814157p-57, 0x1.71b8ef6dcf572p-66,
                                -0x1.761b41316381ap-75};
// cos r = sum (-1)^n z^n / (2n)!: n = 0..4 in double-double, 5..11 in double.
constexpr DD kCosHead[5] = {{1.0, 0.0},
                            {-0x1p-1, 0.0},
                            {0x1.5555555555555p-5, 0x1.5555555555555p-59},
                            {-0x1.6c16c16c16c17p-10, 0x1.f49f49f49f49fp-65},
                            {0x1.a01a01a01a01ap-16, 0x1.a01a01a01a01ap-76}};
constexpr double kCosTail[7] = {-0x1.27e4fb7789f5cp-22, 0x1.1eed8eff8d898p-29,
                                -0x1.93974a8c07c9dp-37, 0x1.ae7f3e733b81fp-45,
                                -0x1.6827863b97d97p-53, 0x1.e542ba4020225p-62,
                                -0x1.0ce396db7f853p-70};
// 2 atanh(s) = 2s sum z^n / (2n+1), z = s^2: n = 0..3 in double-double, 4..14 in double.
constexpr DD kAtanhHead[4] = {{1.0, 0.0},
                              {0x1.5555555555555p-2, 0x1.5555555555555p-56},
                              {0x1.999999999999ap-3, -0x1.999999999999ap-57},
                              {0x1.2492492492492p-3, 0x1.2492492492492p-57}};
constexpr double kAtanhTail[11] = {0x1.c71c71c71c71cp-4, 0x1.745d1745d1746p-4,
                                   0x1.3b13b13b13b14p-4, 0x1.1111111111111p-4,
                                   0x1.e1e1e1e1e1e1ep-5, 0x1.af286bca1af28p-5,
                                   0x1.8618618618618p-5, 0x1.642c8590b2164p-5,
                                   0x1.47ae147ae147bp-5, 0x1.2f684bda12f68p-5,
                                   0x1.1a7b9611a7b96p-5};

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ------------------------------------------------------------------------------------ exp
// e^(th + tl) = 2^k (y.hi + y.lo), |th| <= 746, |tl| <= ulp(th).
DD exp_core(double th, double tl, int& k) {
  const double kd = round_int(th * kInvLn2);
  k = int(kd);
  const double r1 = std::fma(-kd, kLn2[0], th);  // exact: both multiples of 2^-53 or finer
  const DD p = two_prod(kd, kLn2[1]);
  const DD r = two_sum(r1, -p.hi);
  const DD rr = two_sum(r.hi, r.lo + ((tl - p.lo) - kd * kLn2[2]));
  return poly(rr, kExpHead, 7, kExpTail, 12);  // |r| <= 0.35: truncation < 2^-80
}

// (y.hi + y.lo) 2^k for y in [0.7, 1.5]: one rounding where the result is normal.
double scale(DD y, int k) {
  const double v = y.hi + y.lo;
  if (k > 1023) return v * pow2(k - 1) * 2.0;
  if (k >= -1021) return v * pow2(k);
  return (v * pow2(k + 60)) * 0x1p-60;  // subnormal or zero result: rounded twice
}

double exp_dd(double th, double tl) {
  if (th > 710.0) return kInf;
  if (th < -746.0) return 0.0;
  int k = 0;
  const DD y = exp_core(th, tl, k);
  return scale(y, k);
}

// ------------------------------------------------------------------------------------ log
// log x as a double-double for finite x > 0.
DD log_dd(double x) {
  int e = 0;
  uint64_t b = std::bit_cast<uint64_t>(x);
  if (b < (uint64_t(1) << 52)) {  // subnormal: scale into the normal range
    x *= 0x1p54;
    b = std::bit_cast<uint64_t>(x);
    e = -54;
  }
  e += int(b >> 52) - 1023;
  double m = std::bit_cast<double>((b & ((uint64_t(1) << 52) - 1)) | (uint64_t(1023) << 52));
  if (m > kSqrt2) {
    m *= 0.5;  // exact
    ++e;
  }
  const double f = m - 1.0;            // exact (Sterbenz: m in [1/2, 2])
  const DD g = two_sum(m, 1.0);        // m + 1, exact
  const double sh = f / g.hi;
  const double res = std::fma(-sh, g.hi, f) - sh * g.lo;  // f - sh (m + 1)
  const DD s = fast_two_sum(sh, res / g.hi);             // s = (m - 1) / (m + 1), |s| <= 0.172
  const DD z = mul(s, s);
  const DD a = poly(z, kAtanhHead, 4, kAtanhTail, 11);   // truncation < 2^-76
  DD lm = mul(s, a);
  lm = {2.0 * lm.hi, 2.0 * lm.lo};
  if (e == 0) return lm;
  const double ed = double(e);
  const DD el = two_prod(ed, kLn2[0]);
  const DD eln2 = fast_two_sum(el.hi, el.lo + ed * kLn2[1]);
  return add(eln2, lm);  // |e ln2| >= 2 |log m|: no cancellation
}

// ----------------------------------------------------------------------------------- trig
struct Reduced {
  DD r;   // x - k pi/2, |r| <= pi/4 + 2^-40
  int q;  // k mod 4
};

Reduced reduce_pio2(double x) {
  const double kd = round_int(x * kTwoOverPi);
  const double r1 = std::fma(-kd, kPio2[0], x);  // exact for |x| <= 2^30 (det_math.h)
  const DD p = two_prod(kd, kPio2[1]);
  const DD r = two_sum(r1, -p.hi);
  return {two_sum(r.hi, r.lo - (p.lo + kd * kPio2[2])), int(int64_t(kd) & 3)};
}

DD sin_r(DD r) {
  const DD z = mul(r, r);
  const DD s = poly(z, kSinHead, 4, kSinTail, 7);
  return add(r, mul(mul(r, z), s));
}

DD cos_r(DD r) { return poly(mul(r, r), kCosHead, 5, kCosTail, 7); }

void check_trig_arg(double x, const char* fn) {
  OLMO_CHECK(!(std::fabs(x) > kTrigMaxArg), "det::", fn, "(", x, "): |x| > 2^30, outside the",
             " range of the exact argument reduction");
}

}  // namespace

double exp(double x) {
  if (x != x) return x;
  return exp_dd(x, 0.0);
}

double log(double x) {
  if (x != x || x < 0) return kNaN;
  if (x == 0) return -kInf;
  if (x == kInf) return kInf;
  return log_dd(x).hi;
}

double sin(double x) {
  if (x != x || std::fabs(x) == kInf) return kNaN;
  check_trig_arg(x, "sin");
  if (x == 0) return x;  // keeps the sign of zero
  const Reduced red = reduce_pio2(x);
  const double v = (red.q & 1) ? cos_r(red.r).hi : sin_r(red.r).hi;
  return (red.q & 2) ? -v : v;
}

double cos(double x) {
  if (x != x || std::fabs(x) == kInf) return kNaN;
  check_trig_arg(x, "cos");
  const Reduced red = reduce_pio2(x);
  const double v = (red.q & 1) ? sin_r(red.r).hi : cos_r(red.r).hi;
  return ((red.q + 1) & 2) ? -v : v;
}

double pow(double x, double y) {
  if (y == 0 || x == 1) return 1.0;
  if (x != x || y != y) return kNaN;
  const double ay = std::fabs(y);
  // y an integer (every double >= 2^52 is), and odd (none >= 2^53 is).
  const bool y_int = ay >= 0x1p52 || round_int(ay) == ay;
  const bool y_odd = y_int && ay < 0x1p53 && round_int(0.5 * ay) != 0.5 * ay;
  if (x < 0 && !y_int && std::fabs(x) != kInf) return kNaN;
  const double sign = (x < 0 && y_odd) ? -1.0 : 1.0;
  const double ax = std::fabs(x);
  if (ay == kInf) {
    if (ax == 1) return 1.0;
    return (ax > 1) == (y > 0) ? kInf : 0.0;
  }
  if (ax == 0) return y > 0 ? sign * 0.0 : sign * kInf;
  if (ax == kInf) return y > 0 ? sign * kInf : sign * 0.0;
  const DD l = log_dd(ax);
  const DD t = two_prod(y, l.hi);  // y log|x|, its range checked before its low part is used
  if (t.hi > 710.0) return sign * kInf;
  if (t.hi < -746.0) return sign * 0.0;
  const DD tt = fast_two_sum(t.hi, t.lo + y * l.lo);
  return sign * exp_dd(tt.hi, tt.lo);
}

float powf(float x, float y) { return static_cast<float>(pow(double(x), double(y))); }

}  // namespace olmo::det
