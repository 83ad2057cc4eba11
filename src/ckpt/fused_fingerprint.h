// The tensor part of a state fingerprint (state_io.h's fingerprint_state) computed by the pass
// that writes the state, block by block while each block is in cache, instead of by a separate
// read of every weight and moment after it (issue 46 item 5: the per-step fingerprint at most
// 1% of a step; the separate pass reads 12 bytes per parameter from memory).
//
// Use: construct it from the same visit and layout fingerprint_state will get (it records where
// each flat buffer lives: a fingerprint-mode visit that hashes nothing), call add(a, b) for each
// block [a, b) of global flat indices once those elements hold their final values (from any
// thread, in any order, each index at most once: the partial sums are integers mod 2^64, so
// the blocking, the order and the thread count cannot change them), then pass it to
// fingerprint_state. There a flat buffer whose whole fingerprinted range was added takes these
// sums; any other (a skipped step adds nothing, elements outside every optimizer group are
// never added) is computed as usual. So the result is fingerprint_state's by construction
// (ctest train_golden, train_run_verify and ckpt_fused_fingerprint hold them equal).
// Cost of add: fingerprint_partial over the block's elements of every recorded buffer.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ckpt/state_io.h"

namespace olmo::ckpt {

class FusedTensorFingerprint {
 public:
  FusedTensorFingerprint(const StateFn& visit, const FlatLayout& layout, size_t fp_lo,
                         size_t fp_hi);
  ~FusedTensorFingerprint();
  FusedTensorFingerprint(const FusedTensorFingerprint&) = delete;
  FusedTensorFingerprint& operator=(const FusedTensorFingerprint&) = delete;

  // Adds flat indices [a, b) of every recorded buffer. Thread-safe.
  void add(size_t a, size_t b);

  // The partial fingerprint of tensor ti (layout index) of the buffer visited as (prefix, base)
  // over [r0, r1), if that whole range was added; else false.
  bool partial(const std::string& prefix, const float* base, size_t r0, size_t r1, size_t ti,
               uint64_t& out) const;

 private:
  struct Part;
  const FlatLayout& layout_;
  std::vector<size_t> order_;  // layout indices by offset
  std::vector<std::unique_ptr<Part>> parts_;
};

}  // namespace olmo::ckpt
