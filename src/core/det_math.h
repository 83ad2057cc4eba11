// Deterministic elementary functions: exp, log, sin, cos and pow in double precision (and a float
// pow built on the double one), written here so that no value they give depends on the C
// library's libm, whose results differ between versions, vendors and (glibc) its FMA and non-FMA
// code paths. Callers: RoPE tables, inverse frequencies and YaRN (kernels/rope), AdamW's bias
// corrections (optim/adamw), the weight initialisation's Box-Muller draws (model/olmo3). The LR
// schedules keep libm's cos on purpose (optim/schedule.cpp says why).
//
// Contract: each result is a function of the arguments only: the same bits on any x86-64 CPU,
// any OLMO_ISA, any thread count, any libm. The file is compiled once, at the baseline ISA, with
// -ffp-contract=off: every operation rounds once (round to nearest even, MXCSR as core/cpu.h
// pins it) and every fused multiply-add is an explicit std::fma, which IEEE 754 defines exactly
// (one rounding), so every conforming libm's fma gives the same bits; it is the only libm call.
//
// Method (textbook, double-double arithmetic: Dekker / Knuth exact sums and FMA exact products):
// - sin, cos: x = k pi/2 + r with pi/2 in three doubles P1 + P2 + P3 (Cody-Waite). r1 = x - k P1
//   is one FMA and exact (x and k P1 are multiples of 2^-53 when |x| >= 1/2, |r1| < 1), k P2 is
//   an exact product, k P3 and the 2^-161 left of pi/2 err by at most |k| 2^-160 < 2^-129.
//   Range: |x| <= 2^30 (kTrigMaxArg); there no double lies closer than 2^-60.4 to a multiple of
//   pi/2 (continued fractions of pi/2, binade by binade: 45.55 = 0x1.6c6cbc45dc8dep+5 is the
//   closest), so r is known to 2^-69 relative. Beyond: olmo::Error. Then Taylor series of sin r
//   and cos r on |r| <= pi/4, the first five terms in double-double, the rest (to r^23) in
//   double; truncation < 2^-86.
// - exp: x = k ln2 + r (ln2 in three doubles, the same FMA reduction), |r| <= 0.35, Taylor to
//   r^18 (seven terms in double-double), result scaled by 2^k.
// - log: x = 2^e m, m in [sqrt(1/2), sqrt(2)], log m = 2 atanh(s), s = (m - 1) / (m + 1) as a
//   double-double, series to s^29 (four terms in double-double), plus e ln2.
// - pow(x, y) = exp(y log x) with log x and the product y log x in double-double.
//
// Accuracy (tests/core/det_math_test.cpp, ctest core_det_math, against x87 long double sinl /
// cosl / expl / logl / powl): each result is within 1 ulp, and correctly rounded wherever the
// long double decides the rounding: 0 exceptions in 24 M random arguments (sin / cos: fp32
// angles below 2^20, doubles below 2^30, [0, pi], near multiples of pi/2; log: (0, 1], every
// binade; exp: [-708, 709.7]; pow: theta^(2j/hd), x in [2^-20, 2^24] with |y| <= 1, and
// beta^s for AdamW's betas and steps up to 2e6), max error 0.5 ulp to the long double's
// precision. Where det_math and glibc differ and the long double cannot decide (7,458 cases in
// the schedule's and initialisation's ranges), 300-bit mpmath finds det_math's result correctly
// rounded in every case. glibc 2.36's cos,
// log and exp are not correctly rounded at about 0.1% of arguments and its powf at up to 2% of
// AdamW's bias-correction powers: these results differ from glibc's there. Results of exp / pow
// below 2^-1022 are rounded twice (within 1 ulp). Special values: log of a negative number or
// NaN is NaN, log 0 = -inf; sin / cos of inf or NaN are NaN; pow follows C's pow for zeros,
// infinities, NaN and negative bases (NaN unless y is an integer).
// Cost (this Xeon, loaded): log ~55 ns, sin / cos ~50 ns, pow ~150 ns a call (glibc: 5, 15-20,
// 12 ns).
#pragma once

namespace olmo::det {

// sin and cos refuse |x| > kTrigMaxArg (the range where their argument reduction is exact).
inline constexpr double kTrigMaxArg = 0x1p30;

double exp(double x);
double log(double x);
double sin(double x);
double cos(double x);
double pow(double x, double y);
// float(pow(double(x), double(y))): the double result rounded to float (equal to the correctly
// rounded float except where the exact power lies within 2^-53 relative of a float midpoint).
float powf(float x, float y);

}  // namespace olmo::det
