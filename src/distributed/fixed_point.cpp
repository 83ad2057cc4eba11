// 128-bit fixed-point conversions of doubles (see fixed_point.h).
#include "distributed/fixed_point.h"

#include <cmath>
#include <cstring>


namespace olmo::dist {

namespace {
// |m| * 2^sh rounded half to even, for m < 2^53 and sh in any range that keeps the result
// below 2^127 (callers check the exponent first).
inline i128 shift_round(uint64_t m, int sh) {
  if (sh >= 0) return static_cast<i128>(m) << sh;
  const int r = -sh;
  if (r > 63) return 0;  // m < 2^53 <= 2^(r-1): below half an LSB
  const uint64_t q = m >> r;
  const uint64_t rem = m & ((uint64_t(1) << r) - 1);
  const uint64_t half = uint64_t(1) << (r - 1);
  return static_cast<i128>(q + ((rem > half || (rem == half && (q & 1))) ? 1 : 0));
}
}  // namespace

i128 double_to_fixed(double x, bool* bad) { return to_fixed(x, kSumShift, kSumMaxExp, bad); }

i128 to_fixed(double x, int shift, int max_exp, bool* bad) {
  uint64_t b;
  std::memcpy(&b, &x, 8);
  int e = int((b >> 52) & 0x7ff);
  uint64_t m = b & 0xfffffffffffffull;
  if (e >= 1023 + max_exp) {
    *bad = true;
    return 0;
  }
  if (e == 0) {
    if (m == 0) return 0;
    e = 1;
  } else {
    m |= uint64_t(1) << 52;
  }
  // x = m * 2^(e - 1075)
  const i128 v = shift_round(m, e - 1075 + shift);
  return (b >> 63) ? -v : v;
}

double from_fixed(i128 v, int shift) { return std::ldexp(static_cast<double>(v), -shift); }

double fixed_to_double(i128 v) { return static_cast<double>(v) * 0x1p-64; }

}  // namespace olmo::dist
