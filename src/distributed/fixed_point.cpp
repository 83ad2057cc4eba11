// Fixed-point conversions and accumulation (see fixed_point.h).
#include "distributed/fixed_point.h"

#include <cmath>
#include <cstring>

#include "distributed/fixed_point_body.h"
#include "kernels/dispatch.h"

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

i128 float_to_fixed(float x, bool* bad) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  int e = int((b >> 23) & 0xff);
  uint64_t m = b & 0x7fffff;
  if (e >= 127 + kGradMaxExp) {  // inf, NaN, or too large
    *bad = true;
    return 0;
  }
  if (e == 0) {
    if (m == 0) return 0;
    e = 1;  // subnormal
  } else {
    m |= 0x800000;
  }
  // x = m * 2^(e - 150);  x * 2^88 = m * 2^(e - 62)
  const i128 v = shift_round(m, e - 150 + kGradShift);
  return (b >> 31) ? -v : v;
}

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

float fixed_to_float(i128 v) {
  // One correct rounding: below 2^62 the int64 -> float conversion rounds once; above, shift
  // the magnitude down to 62 bits keeping a sticky bit for whatever was shifted out (so the
  // single int64 -> float rounding is still the correct one), then scale exactly.
  const bool neg = v < 0;
  unsigned __int128 u = neg ? -static_cast<unsigned __int128>(v) : static_cast<unsigned __int128>(v);
  int s = 0;
  if (u >> 62) {
    const uint64_t top = static_cast<uint64_t>(u >> 64);
    const int bits = top ? 128 - __builtin_clzll(top) : 64 - __builtin_clzll(static_cast<uint64_t>(u));
    s = bits - 62;
    const unsigned __int128 dropped = u & ((static_cast<unsigned __int128>(1) << s) - 1);
    u = (u >> s) | (dropped ? 1 : 0);
  }
  // 2^(s - 88) as a float built from its bits (s - 88 is in [-88, 41]: a normal number).
  const uint32_t eb = uint32_t(127 + s - kGradShift) << 23;
  float scale;
  std::memcpy(&scale, &eb, 4);
  const float f = static_cast<float>(static_cast<int64_t>(u)) * scale;
  return neg ? -f : f;
}

double fixed_to_double(i128 v) { return static_cast<double>(v) * 0x1p-64; }

namespace {
constexpr int64_t kGrain = 1 << 15;  // elements per thread at least
}  // namespace

bool accumulate_fixed(uint64_t* lo, uint64_t* hi, const float* x, size_t n) {
  auto f = OLMO_DISPATCH(fx_accumulate);
  uint32_t bad = 0;
  kernels::parallel_blocks(int64_t(n), kGrain, 8, [&](int64_t i0, int64_t i1) {
    const uint32_t b = f(lo + i0, hi + i0, x + i0, i1 - i0);
    if (b) __atomic_fetch_or(&bad, b, __ATOMIC_RELAXED);
  });
  return bad != 0;
}

bool convert_fixed(uint64_t* lo, uint64_t* hi, const float* x, size_t n) {
  auto f = OLMO_DISPATCH(fx_convert);
  uint32_t bad = 0;
  kernels::parallel_blocks(int64_t(n), kGrain, 8, [&](int64_t i0, int64_t i1) {
    const uint32_t b = f(lo + i0, hi + i0, x + i0, i1 - i0);
    if (b) __atomic_fetch_or(&bad, b, __ATOMIC_RELAXED);
  });
  return bad != 0;
}

void add_fixed(uint64_t* lo, uint64_t* hi, const uint64_t* lo2, const uint64_t* hi2, size_t n) {
  auto f = OLMO_DISPATCH(fx_add);
  kernels::parallel_blocks(int64_t(n), kGrain, 8, [&](int64_t i0, int64_t i1) {
    f(lo + i0, hi + i0, lo2 + i0, hi2 + i0, i1 - i0);
  });
}

void fixed_to_floats(float* out, const uint64_t* lo, const uint64_t* hi, size_t n) {
  auto f = OLMO_DISPATCH(fx_to_float);
  kernels::parallel_blocks(int64_t(n), kGrain, 8, [&](int64_t i0, int64_t i1) {
    f(out + i0, lo + i0, hi + i0, i1 - i0);
  });
}

// ---- references: long double / frexp based, written independently of the bit twiddling ----

i128 float_to_fixed_reference(float x, bool* bad) {
  if (!std::isfinite(x) || std::fabs(x) >= std::ldexp(1.0f, kGradMaxExp)) {
    *bad = true;
    return 0;
  }
  // y = x * 2^88 exactly (a double holds any float times a power of two); split y into the
  // integer part and the fraction, then round half to even.
  const double y = std::ldexp(double(x), kGradShift);
  const double ay = std::fabs(y);
  const double hi = std::floor(std::ldexp(ay, -64));           // exact
  const double rest = ay - std::ldexp(hi, 64);                 // exact, in [0, 2^64)
  double lo = std::floor(rest);
  const double frac = rest - lo;
  if (frac > 0.5 || (frac == 0.5 && std::fmod(lo, 2.0) == 1.0)) lo += 1.0;
  i128 v = (static_cast<i128>(static_cast<uint64_t>(hi)) << 64);
  // lo may be 2^64 after rounding up: add as two halves.
  const double lo_hi = std::floor(std::ldexp(lo, -32));
  v += static_cast<i128>(static_cast<uint64_t>(lo_hi)) << 32;
  v += static_cast<i128>(static_cast<uint64_t>(lo - std::ldexp(lo_hi, 32)));
  return x < 0 ? -v : v;
}

float fixed_to_float_reference(i128 v) {
  // Round |v| to 24 significant bits by hand (half to even), then scale.
  const bool neg = v < 0;
  unsigned __int128 a = neg ? static_cast<unsigned __int128>(-v) : static_cast<unsigned __int128>(v);
  if (a == 0) return neg ? -0.0f : 0.0f;
  int bits = 0;
  for (unsigned __int128 t = a; t; t >>= 1) ++bits;
  int drop = bits > 24 ? bits - 24 : 0;
  unsigned __int128 q = a >> drop;
  if (drop > 0) {
    const unsigned __int128 rem = a & ((static_cast<unsigned __int128>(1) << drop) - 1);
    const unsigned __int128 half = static_cast<unsigned __int128>(1) << (drop - 1);
    if (rem > half || (rem == half && (q & 1))) ++q;
  }
  const double r = std::ldexp(double(static_cast<uint64_t>(q)), drop - kGradShift);
  return static_cast<float>(neg ? -r : r);
}

}  // namespace olmo::dist
