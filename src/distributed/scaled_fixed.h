// World-size-invariant gradient sums in int64 fixed point with one power-of-two scale per
// segment (a parameter tensor). The exact reduction of dist.reduce=exact (zero.h) uses it:
//
//   q = round_half_even(x * 2^shift_s)          per element of segment s (int64)
//   sum over micro-batches and ranks: int64 adds (exact and associative: any partition of the
//   global batch into micro-batches, ranks and reduction trees gives the same integers)
//   g = float(sum * 2^-shift_s)                 once, after the reduction
//
// The scale is a pure function of invariant data, so every rank of every world size picks the
// same one: the largest finite exponent E_s seen in segment s over every micro-batch of the
// previous step (an exact max, max-reduced over ranks), plus kHeadroom binary orders of growth:
//   limit_s = E_s + kHeadroom + 1     (biased exponents: an element with e >= limit_s overflows)
//   shift_s = L + 127 - limit_s,      L = 62 - ceil(log2 M)  (M = micro-batches in the global step)
// so every accepted |q| < 2^L and any sum of at most M of them stays below 2^62 (no wrap).
// An element with e >= limit_s is an *overflow*: detected in the conversion, OR-reduced over ranks
// (the same decision everywhere, since it is a property of the global batch), and answered by a
// redo of the step with the scales set from this step's own exponents (which then fit).
// A segment never seen (E_s = 0, e.g. the first step) overflows on its first nonzero element:
// the first step is measured, then redone. Counted in metrics (reduce_redos). How a redo gets
// the step's gradients again (kept fp32 copies or a recompute): distributed/data_parallel.h.
//
// Error bound: each conversion rounds by at most half a unit, 2^-(shift_s + 1); the sum of M
// micro-batches is within M * 2^-(shift_s + 1) of the exact sum of the fp32 micro-batch
// gradients, then rounded to fp32 (int64 -> double -> float: at most 0.5 ulp of fp32 plus
// 2^-53 relative). Relative to the segment's largest element (>= 2^(E_s - 127)) the absolute
// error is below M * 2^(kHeadroom + 1 - L) <= 2^(kHeadroom + 1 - 52) ~ 2^-48 for M <= 1024:
// elements down to ~2^-24 of their tensor's largest keep full fp32 precision; smaller ones carry
// that absolute error (far below AdamW's eps for gradients clipped to norm 1).
// Memory: 8 bytes per element of accumulator; on the wire 8 bytes per element of a sum, or the
// fp32 element itself (4 bytes) when the receiver converts it: q(x) depends on x and the
// segment's scale only, so any rank computes the same integer (zero.h, sharded accumulator).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace olmo::dist {

// Conversion flags.
constexpr uint32_t kOverflow = 1, kNonFinite = 2;
// Binary orders of growth allowed over the previous step's largest exponent before a redo.
constexpr int kHeadroom = 3;

// L for M micro-batches per global step (M >= 1): 62 - ceil(log2 M).
int value_bits(int64_t micro_batches);

// The per-segment scales of one flat vector [0, numel) cut into segments [bounds[s],
// bounds[s+1]) (bounds[0] = 0, last = numel, strictly increasing).
class SegmentScales {
 public:
  SegmentScales() = default;
  SegmentScales(std::vector<size_t> bounds, int64_t micro_batches);

  // Start of a step: M = an upper bound on the global step's micro-batches (sets L).
  void begin_step(int64_t micro_batches) { L_ = dist::value_bits(micro_batches); }
  size_t segments() const { return bounds_.size() - 1; }
  const std::vector<size_t>& bounds() const { return bounds_; }
  int value_bits() const { return L_; }
  // The invariant state: previous step's largest biased exponent per segment (0 = none seen).
  const std::vector<int64_t>& exponents() const { return emax_; }
  void set_exponents(const std::vector<int64_t>& e);
  int32_t shift(size_t s) const;
  uint32_t limit(size_t s) const;

  // acc[i - a] (+)= q(x[i - a]) for the flat range [a, b) (accumulate false: store). Folds the
  // largest finite exponent of each segment into seen[s] (seen has segments() entries).
  // Returns the ORed flags. OpenMP over blocks; every ISA and thread count gives the same bits.
  // Two fusions in the same pass (each saves a pass over memory; same bits as without):
  //   clear (null, or x itself): x[i - a] = 0 after it is read;
  //   round_out (null, or out[b - a]): out[i - a] = to_float of the new sum, and acc is NOT
  //   written (for the last addition to a sum that is rounded right after).
  uint32_t convert(int64_t* acc, const float* x, size_t a, size_t b, bool accumulate,
                   std::vector<int64_t>& seen, float* clear = nullptr,
                   float* round_out = nullptr) const {
    return convert_sum(acc, &x, 1, a, b, accumulate, seen, clear, round_out);
  }
  // k gradients in one pass: acc[i - a] (+)= q(xs[0][i - a]) + ... + q(xs[k-1][i - a]) (k >= 0),
  // the same integers, flags and seen as k convert calls one after the other (integer adds in
  // any order), for 4 B per element read per source and one write of acc (or of round_out)
  // instead of a read-modify-write of acc per source. clear: null or xs[k-1] itself.
  uint32_t convert_sum(int64_t* acc, const float* const* xs, size_t k, size_t a, size_t b,
                       bool accumulate, std::vector<int64_t>& seen, float* clear = nullptr,
                       float* round_out = nullptr) const;
  // out[i - a] = float(q[i - a] * 2^-shift) for the flat range [a, b).
  void to_float(float* out, const int64_t* q, size_t a, size_t b) const;

 private:
  template <class F>
  void for_each_piece(size_t a, size_t b, F&& f) const;

  std::vector<size_t> bounds_{0, 0};
  std::vector<int64_t> emax_;
  int L_ = 62;
};

// acc[i] += add[i].
void add_int64(int64_t* acc, const int64_t* add, size_t n);

// Slow, readable references (rational arithmetic through ldexp / floor), for the tests.
int64_t quantise_reference(float x, int32_t shift, uint32_t limit, uint32_t* flags);
float dequantise_reference(int64_t q, int32_t shift);

}  // namespace olmo::dist
