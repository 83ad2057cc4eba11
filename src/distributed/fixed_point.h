// Exact, order-free sums of floating-point values in 128-bit two's-complement fixed point.
// A value x becomes the integer round(x * 2^S) (round half to even) held in an __int128; sums of
// such integers are exact and associative, so a sum over any partition (micro-batches, ranks,
// reduction trees) gives the same bits, and one rounding back to float at the end.
//
// Gradients (fp32) use S = kGradShift = 88: every fp32 value with |x| >= 2^-64 converts exactly
// (24-bit mantissa), smaller ones are rounded to a multiple of 2^-88 (~3e-27); |x| >= 2^28 (or
// NaN/inf) is "out of range" and flagged (the caller treats the step's gradient as non-finite).
// With |x| < 2^28 a sum of up to 2^10 micro-batches cannot overflow (2^38 * 2^88 < 2^127).
// Doubles (loss sums) use S = kSumShift = 64, |x| < 2^60.
// Cost: ~1-2 ns per element per conversion (integer ops, no branches on the common path), 16
// bytes of accumulator per element.
#pragma once
#include <cstddef>
#include <cstdint>

namespace olmo::dist {

using i128 = __int128;

constexpr int kGradShift = 88;
constexpr int kGradMaxExp = 28;    // |x| < 2^28
constexpr int kSumShift = 64;
constexpr int kSumMaxExp = 60;     // |x| < 2^60
constexpr int kMaxMicroBatches = 1024;

// round(x * 2^88); sets *bad (never clears it) when x is NaN/inf or |x| >= 2^28 and returns 0.
i128 float_to_fixed(float x, bool* bad);
// round(x * 2^64); same contract with |x| < 2^60.
i128 double_to_fixed(double x, bool* bad);
// General form: round(x * 2^shift) for |x| < 2^max_exp (else *bad), and back.
i128 to_fixed(double x, int shift, int max_exp, bool* bad);
double from_fixed(i128 v, int shift);
// Nearest float / double to v * 2^-88 (resp. 2^-64).
float fixed_to_float(i128 v);
double fixed_to_double(i128 v);

// Bulk kernels on structure-of-arrays 128-bit integers: element i is hi[i] * 2^64 + lo[i]
// (two's complement), so the loops vectorise (fixed_point_body.h, stamped per ISA, OpenMP over
// blocks). Every ISA and thread count gives the same bits (exact integer functions).
// (lo, hi)[i] += float_to_fixed(x[i]); returns true if any element was out of range.
bool accumulate_fixed(uint64_t* lo, uint64_t* hi, const float* x, size_t n);
// (lo, hi)[i] = float_to_fixed(x[i]); returns true if any element was out of range.
bool convert_fixed(uint64_t* lo, uint64_t* hi, const float* x, size_t n);
// (lo, hi)[i] += (lo2, hi2)[i].
void add_fixed(uint64_t* lo, uint64_t* hi, const uint64_t* lo2, const uint64_t* hi2, size_t n);
// out[i] = fixed_to_float(hi[i] * 2^64 + lo[i]).
void fixed_to_floats(float* out, const uint64_t* lo, const uint64_t* hi, size_t n);
inline i128 join(uint64_t lo, uint64_t hi) {
  return static_cast<i128>((static_cast<unsigned __int128>(hi) << 64) | lo);
}

// Slow, readable references (exact rational arithmetic on the IEEE fields), for tests.
i128 float_to_fixed_reference(float x, bool* bad);
float fixed_to_float_reference(i128 v);

}  // namespace olmo::dist
