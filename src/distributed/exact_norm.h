// Order-free sums of squares of fp32 values, for the exact reduction's global gradient norm.
// x = m * 2^(max(e,1) - 150) (e the biased exponent, m the 24-bit mantissa), so
// x^2 = m^2 * 2^(2 max(e,1) - 300) with m^2 < 2^48 an integer: the squares are summed as
// integers in one bin per exponent (uint64 per chunk of 2^15 elements, then 128-bit), so any
// partition of the vector (ranks, threads, chunks) gives the same bins, and the bins are
// summed into a double in one fixed order at the end (the same double on every rank).
// Cost: ~1 ns per element (integer ops and a bin add), 256 x 16 bytes of bins.
#pragma once
#include <array>
#include <cstddef>

namespace olmo::dist {

using SquareBins = std::array<__int128, 256>;  // [255] counts the non-finite elements

// bins[e] += m^2 for every x[i] (bins[255] += 1 for inf / NaN).
void add_square_bins(const float* x, size_t n, SquareBins& bins);
// sqrt(sum of the squares); +inf when bins[255] > 0.
double norm_from_bins(const SquareBins& bins);

}  // namespace olmo::dist
