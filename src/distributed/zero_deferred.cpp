// GradReducer's deferred conversion (zero.h, defer_micro_batch): the micro-batches of a step
// whose fp32 gradients the caller keeps (DataParallel's kept copies) are converted together with
// the rank's last one, in one pass: acc = q(kept_1) + ... + q(kept_k) + q(g) per element
// (SegmentScales::convert_sum: integer adds, so the integers, flags and exponents of k + 1
// conversions one at a time). The embedding's rows are converted from the gradients that touched
// them only: a kept copy holds its own rows (its other rows are whatever an earlier step left).
#include <algorithm>

#include "core/error.h"
#include "distributed/zero.h"

namespace olmo::dist {

void GradReducer::defer_micro_batch(const float* kept) {
  OLMO_CHECK(mode_ == ReduceMode::exact && local_ && !streamed_,
             "defer_micro_batch: exact mode, local accumulator, before the streamed micro-batch");
  if (ndeferred_ == deferred_.size()) deferred_.emplace_back();
  Deferred& d = deferred_[ndeferred_++];
  d.g = kept;
  d.all_rows = sparse_rows_ && !mb_rows_known_;
  if (mb_rows_known_) d.rows = mb_rows_;
  mb_rows_known_ = false;
}

uint32_t GradReducer::convert_dense(const float* g, size_t a, size_t b, bool add, float* clear,
                                    float* out) {
  if (a >= b) return 0;
  srcs_.clear();
  for (size_t j = 0; j < ndeferred_; ++j) srcs_.push_back(deferred_[j].g + a);
  srcs_.push_back(g + a);
  return scales_.convert_sum(acc_.data() + a, srcs_.data(), srcs_.size(), a, b, add, seen_,
                             clear ? clear + a : nullptr, out ? out + a : nullptr);
}

uint32_t GradReducer::convert_rows(const float* g, bool add, float* clear, float* out) {
  const size_t ea = sparse_begin_, D = row_len_, V = sparse_rows_;
  // (row, source) pairs, g last among a row's sources (the clear applies to it only).
  row_src_.clear();
  const auto rows_of = [&](uint64_t src, bool all, const std::vector<uint32_t>& rows) {
    if (all) {
      for (uint64_t r = 0; r < V; ++r) row_src_.push_back(r << 32 | src);
      return;
    }
    for (uint32_t r : rows) row_src_.push_back(uint64_t(r) << 32 | src);
    skipped_rows_ += int64_t(V - rows.size());  // rows this micro-batch's conversion left out
  };
  for (size_t j = 0; j < ndeferred_; ++j) rows_of(j, deferred_[j].all_rows, deferred_[j].rows);
  rows_of(ndeferred_, !mb_rows_known_, mb_rows_);
  std::sort(row_src_.begin(), row_src_.end());
  uint32_t f = 0;
  // Rows no gradient touched: q = 0 (a store writes 0, a rounding rounds acc; add alone: no-op).
  const auto gap = [&](size_t r0, size_t r1) {
    if (r0 >= r1 || (add && !out)) return;
    const size_t a = ea + r0 * D, b = ea + r1 * D;
    f |= scales_.convert_sum(acc_.data() + a, nullptr, 0, a, b, add, seen_, nullptr,
                             out ? out + a : nullptr);
  };
  size_t next = 0;  // the first row not yet converted
  for (size_t p = 0; p < row_src_.size();) {
    const size_t r = size_t(row_src_[p] >> 32), a = ea + r * D;
    gap(next, r);
    srcs_.clear();
    bool has_g = false;
    for (; p < row_src_.size() && size_t(row_src_[p] >> 32) == r; ++p) {
      const size_t j = size_t(row_src_[p] & 0xffffffffu);
      has_g = j == ndeferred_;
      srcs_.push_back((has_g ? g : deferred_[j].g) + a);
    }
    f |= scales_.convert_sum(acc_.data() + a, srcs_.data(), srcs_.size(), a, a + D, add, seen_,
                             clear && has_g ? clear + a : nullptr, out ? out + a : nullptr);
    next = r + 1;
  }
  gap(next, V);
  return f;
}

uint32_t GradReducer::convert_deferred(const float* g, bool add, float* clear, float* out) {
  uint32_t f;
  if (!sparse_rows_) {
    f = convert_dense(g, 0, layout_.numel, add, clear, out);
  } else {
    const size_t ea = sparse_begin_, eb = ea + sparse_rows_ * row_len_;
    f = convert_dense(g, 0, ea, add, clear, out) | convert_rows(g, add, clear, out) |
        convert_dense(g, eb, layout_.numel, add, clear, out);
  }
  ndeferred_ = 0;
  mb_rows_known_ = false;
  return f;
}

}  // namespace olmo::dist
