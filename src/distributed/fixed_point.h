// Exact, order-free sums of doubles in 128-bit two's-complement fixed point: a value x becomes
// the integer round(x * 2^S) (round half to even) held in an __int128; sums of such integers are
// exact and associative, so a sum over any partition (micro-batches, ranks, reduction trees)
// gives the same bits, and one rounding back to double at the end. Used for the step's loss
// sums (S = kSumShift = 64, |x| < 2^60) and checkpoint fingerprints; gradients use the int64
// per-tensor-scaled format of distributed/scaled_fixed.h.
// Cost: a few ns per value (scalar integer ops); 16 bytes per value.
#pragma once
#include <cstddef>
#include <cstdint>

namespace olmo::dist {

using i128 = __int128;

constexpr int kSumShift = 64;
constexpr int kSumMaxExp = 60;     // |x| < 2^60
// The most micro-batches per global step the exact reduction accepts (train::validate).
constexpr int kMaxMicroBatches = 1024;

// round(x * 2^64); sets *bad (never clears it) when x is NaN/inf or |x| >= 2^60 and returns 0.
i128 double_to_fixed(double x, bool* bad);
// General form: round(x * 2^shift) for |x| < 2^max_exp (else *bad), and back.
i128 to_fixed(double x, int shift, int max_exp, bool* bad);
double from_fixed(i128 v, int shift);
// Nearest double to v * 2^-64.
double fixed_to_double(i128 v);

}  // namespace olmo::dist
