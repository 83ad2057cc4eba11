// int64 fixed point with per-segment power-of-two scales (see scaled_fixed.h).
#include "distributed/scaled_fixed.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "distributed/scaled_fixed_body.h"
#include "kernels/dispatch.h"

namespace olmo::dist {

namespace {
constexpr int64_t kGrain = 1 << 15;  // elements per thread at least
}  // namespace

int value_bits(int64_t micro_batches) {
  OLMO_CHECK(micro_batches >= 1, "value_bits: micro_batches must be >= 1, got ", micro_batches);
  int c = 0;
  while ((int64_t(1) << c) < micro_batches) ++c;
  OLMO_CHECK(c <= 30, "value_bits: ", micro_batches, " micro-batches per step is beyond 2^30");
  return 62 - c;
}

SegmentScales::SegmentScales(std::vector<size_t> bounds, int64_t micro_batches)
    : bounds_(std::move(bounds)), L_(dist::value_bits(micro_batches)) {
  OLMO_CHECK(bounds_.size() >= 2 && bounds_.front() == 0, "SegmentScales: bounds must start at 0");
  for (size_t s = 1; s < bounds_.size(); ++s)
    OLMO_CHECK(bounds_[s] > bounds_[s - 1], "SegmentScales: bounds must increase");
  emax_.assign(bounds_.size() - 1, 0);
}

void SegmentScales::set_exponents(const std::vector<int64_t>& e) {
  OLMO_CHECK(e.size() == emax_.size(), "SegmentScales: ", e.size(), " exponents for ",
             emax_.size(), " segments");
  for (int64_t v : e) OLMO_CHECK(v >= 0 && v <= 254, "SegmentScales: exponent ", v, " outside [0, 254]");
  emax_ = e;
}

uint32_t SegmentScales::limit(size_t s) const {
  return uint32_t(std::min<int64_t>(255, emax_[s] + kHeadroom + 1));
}

int32_t SegmentScales::shift(size_t s) const { return int32_t(L_ + 127 - int(limit(s))); }

template <class F>
void SegmentScales::for_each_piece(size_t a, size_t b, F&& f) const {
  if (a >= b) return;
  size_t s = size_t(std::upper_bound(bounds_.begin(), bounds_.end(), a) - bounds_.begin()) - 1;
  for (size_t lo = a; lo < b; ++s) {
    const size_t hi = std::min(b, bounds_[s + 1]);
    f(s, lo, hi);
    lo = hi;
  }
}

uint32_t SegmentScales::convert_sum(int64_t* acc, const float* const* xs, size_t k, size_t a,
                                    size_t b, bool accumulate, std::vector<int64_t>& seen,
                                    float* clear, float* round_out) const {
  OLMO_CHECK(b <= bounds_.back() && seen.size() == segments(), "SegmentScales::convert: range [",
             a, ", ", b, ") or seen[] does not fit ", bounds_.back(), " elements");
  OLMO_CHECK(!clear || (k > 0 && clear == xs[k - 1]),
             "SegmentScales::convert: clear must be the last source itself or null");
  OLMO_CHECK(k <= size_t(INT32_MAX), "SegmentScales::convert_sum: ", k, " sources");
  auto f = OLMO_DISPATCH(sfx_run);
  uint32_t flags = 0;
  for_each_piece(a, b, [&](size_t s, size_t lo, size_t hi) {
    const int32_t sh = shift(s);
    const uint32_t lim = limit(s);
    uint32_t em = 0;
    kernels::parallel_blocks(int64_t(hi - lo), kGrain, 8, [&](int64_t i0, int64_t i1) {
      uint32_t e = 0;
      const int64_t at = int64_t(lo - a) + i0;
      const uint32_t fl = f(acc + at, xs, int32_t(k), at, i1 - i0, sh, lim, &e, accumulate ? 1 : 0,
                            clear ? clear + at : nullptr, round_out ? round_out + at : nullptr);
      if (fl) __atomic_fetch_or(&flags, fl, __ATOMIC_RELAXED);
      uint32_t cur = __atomic_load_n(&em, __ATOMIC_RELAXED);
      while (e > cur && !__atomic_compare_exchange_n(&em, &cur, e, true, __ATOMIC_RELAXED,
                                                     __ATOMIC_RELAXED)) {
      }
    });
    seen[s] = std::max<int64_t>(seen[s], em);
  });
  return flags;
}

void SegmentScales::to_float(float* out, const int64_t* q, size_t a, size_t b) const {
  auto f = OLMO_DISPATCH(sfx_to_float);
  for_each_piece(a, b, [&](size_t s, size_t lo, size_t hi) {
    const int32_t sh = shift(s);
    kernels::parallel_blocks(int64_t(hi - lo), kGrain, 8, [&](int64_t i0, int64_t i1) {
      f(out + (lo - a) + i0, q + (lo - a) + i0, i1 - i0, sh);
    });
  });
}

void add_int64(int64_t* acc, const int64_t* add, size_t n) {
  auto f = OLMO_DISPATCH(sfx_add);
  kernels::parallel_blocks(int64_t(n), kGrain, 8,
                           [&](int64_t i0, int64_t i1) { f(acc + i0, add + i0, i1 - i0); });
}

// ---- references: ldexp / floor on doubles, written independently of the bit twiddling ----

int64_t quantise_reference(float x, int32_t shift, uint32_t limit, uint32_t* flags) {
  if (!std::isfinite(x)) {
    *flags |= kNonFinite;
    return 0;
  }
  // |x| >= 2^(limit - 127) overflows (limit is a biased exponent).
  if (x != 0 && std::fabs(double(x)) >= std::ldexp(1.0, int(limit) - 127)) *flags |= kOverflow;
  const double y = std::ldexp(double(x), shift);  // exact: a float times a power of two
  if (std::fabs(y) >= 0x1p62) return 0;           // only for an overflowed element
  const double fl = std::floor(std::fabs(y));
  const double frac = std::fabs(y) - fl;
  double r = fl;
  if (frac > 0.5 || (frac == 0.5 && std::fmod(fl, 2.0) == 1.0)) r += 1.0;
  const int64_t q = int64_t(r);
  return x < 0 ? -q : q;
}

float dequantise_reference(int64_t q, int32_t shift) {
  // Round |q| to 24 significant bits by hand (half to even), then scale.
  const bool neg = q < 0;
  uint64_t a = neg ? uint64_t(0) - uint64_t(q) : uint64_t(q);
  if (a == 0) return 0.0f;
  int bits = 64 - __builtin_clzll(a);
  const int drop = bits > 24 ? bits - 24 : 0;
  uint64_t m = a >> drop;
  if (drop > 0) {
    const uint64_t rem = a & ((uint64_t(1) << drop) - 1), half = uint64_t(1) << (drop - 1);
    if (rem > half || (rem == half && (m & 1))) ++m;
  }
  const double r = std::ldexp(double(m), drop - shift);
  return float(neg ? -r : r);
}

}  // namespace olmo::dist
