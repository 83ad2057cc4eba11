// Exponent-binned exact sums of squares (see exact_norm.h).
#include "distributed/exact_norm.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include <omp.h>

namespace olmo::dist {

namespace {
constexpr size_t kChunk = size_t(1) << 15;  // 2^15 squares < 2^48 each fit a uint64 bin

void chunk_bins(const float* x, size_t n, SquareBins& bins) {
  uint64_t b64[256] = {};
  for (size_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, x + i, 4);
    const uint32_t e = (u >> 23) & 0xff;
    const uint64_t m = (u & 0x7fffff) | (e ? 0x800000u : 0u);
    b64[e] += e == 255 ? 1 : m * m;
  }
  for (int e = 0; e < 256; ++e) bins[size_t(e)] += __int128(b64[e]);
}
}  // namespace

void add_square_bins(const float* x, size_t n, SquareBins& bins) {
  const int64_t chunks = int64_t((n + kChunk - 1) / kChunk);
#pragma omp parallel if (chunks > 1)
  {
    SquareBins mine{};
#pragma omp for schedule(static) nowait
    for (int64_t c = 0; c < chunks; ++c) {
      const size_t lo = size_t(c) * kChunk;
      chunk_bins(x + lo, std::min(kChunk, n - lo), mine);
    }
#pragma omp critical
    for (size_t e = 0; e < 256; ++e) bins[e] += mine[e];  // integers: any thread order
  }
}

double norm_from_bins(const SquareBins& bins) {
  if (bins[255] > 0) return std::numeric_limits<double>::infinity();
  // From the smallest exponent up, in long double (64-bit mantissa): one fixed order.
  long double s = 0;
  for (int e = 0; e < 255; ++e)
    if (bins[size_t(e)]) s += std::ldexp(static_cast<long double>(bins[size_t(e)]), 2 * std::max(e, 1) - 300);
  return double(std::sqrt(s));
}

}  // namespace olmo::dist
