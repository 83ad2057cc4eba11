// ZeRO sharding, bucketed reduce-scatter, exact / fast reductions, all-gather (see zero.h).
#include "distributed/zero.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <type_traits>

#include "core/error.h"
#include "core/timer.h"
#include "distributed/exact_norm.h"
#include "distributed/grad_stream.h"
#include "optim/grad_clip.h"

namespace olmo::dist {

ShardLayout::ShardLayout(size_t n, size_t w) : numel(n), world(w) {
  OLMO_CHECK(w >= 1, "shard layout: world must be >= 1");
  shard_len = (n + w - 1) / w;
  shard_len = (shard_len + 15) / 16 * 16;
}

ReduceMode parse_reduce_mode(const std::string& s) {
  for (size_t i = 0; i < std::size(kReduceModeNames); ++i)
    if (s == kReduceModeNames[i]) return static_cast<ReduceMode>(i);
  throw Error(cat("dist.reduce must be ", kReduceModeNames[0], " or ", kReduceModeNames[1],
                  ", got '", s, "'"));
}

bool local_accumulator(AccumulatorSetting setting, int64_t world, int64_t micro_batches_per_rank) {
  if (setting == AccumulatorSetting::local) return true;
  if (setting == AccumulatorSetting::sharded) return false;
  return world == 1 || (world <= kLocalAccumulatorMaxWorld && micro_batches_per_rank > 1);
}

bool local_accumulator(const std::string& setting, int64_t world, int64_t micro_batches_per_rank) {
  for (size_t i = 0; i < std::size(kAccumulatorSettingNames); ++i)
    if (setting == kAccumulatorSettingNames[i])
      return local_accumulator(AccumulatorSetting(i), world, micro_batches_per_rank);
  throw Error(cat("dist.exact_accumulator must be auto, local or sharded, got '", setting, "'"));
}

// Rank r's part of the range [a, b): [lo, lo + n) of the flat vector (n = 0 when none).
namespace {
struct Part {
  size_t lo = 0, n = 0;
};
Part part_of(const ShardLayout& L, size_t r, size_t a, size_t b) {
  const size_t lo = std::max(a, L.begin(r)), hi = std::min(b, L.end(r));
  return lo < hi ? Part{lo, hi - lo} : Part{};
}
}  // namespace

GradReducer::GradReducer(Communicator& comm, size_t numel, ReduceMode mode, size_t bucket_elems,
                         bool local_accumulator, std::vector<size_t> segments)
    : comm_(comm), layout_(numel, size_t(comm.world())), mode_(mode),
      local_(local_accumulator || comm.world() == 1) {
  const size_t W = layout_.world;
  bucket_ = std::max<size_t>(16, std::min(layout_.shard_len, (bucket_elems + W - 1) / W));
  nbuckets_ = layout_.shard_len == 0 ? 0 : (layout_.shard_len + bucket_ - 1) / bucket_;
  for (int s = 0; s < 2; ++s) {
    if (mode_ == ReduceMode::exact) {
      stage_i_[s].assign(W * bucket_, 0);
      recv_i_[s].assign(bucket_, 0);
    } else {
      stage_f_[s].assign(W * bucket_, 0.0f);
      recv_f_[s].assign(bucket_, 0.0f);
    }
  }
  if (mode_ == ReduceMode::exact) {
    const size_t n = local_ ? std::max(numel, nbuckets_ * bucket_) : nbuckets_ * bucket_;
    acc_.assign(n, 0);
    if (segments.empty()) segments = {0, numel};
    if (numel > 0) scales_ = SegmentScales(std::move(segments), 1);
    seen_.assign(scales_.segments(), 0);
  }
}

GradReducer::~GradReducer() = default;

double GradReducer::comm_seconds() const {
  return comm_s_ + (stream_ ? stream_->comm_seconds() : 0.0);
}

size_t GradReducer::buffer_bytes() const {
  size_t b = acc_.size() * sizeof(int64_t) + (stream_ ? stream_->buffer_bytes() : 0);
  for (int s = 0; s < 2; ++s)
    b += (stage_i_[s].size() + recv_i_[s].size()) * sizeof(int64_t) +
         (stage_f_[s].size() + recv_f_[s].size()) * sizeof(float);
  return b;
}

void GradReducer::begin_step(int64_t global_instances) {
  // local: the step's first micro-batch overwrites the accumulator (a store: 0 + q = q, the
  // same bits), so no 8 B/parameter clear and no read of zeros here.
  if (!local_) std::fill(acc_.begin(), acc_.end(), int64_t(0));
  if (mode_ == ReduceMode::exact && layout_.numel > 0)
    scales_.begin_step(std::max<int64_t>(1, global_instances));
  std::fill(seen_.begin(), seen_.end(), int64_t(0));
  fresh_ = true;
  flags_ = 0;
  redo_ = false;
  streamed_ = false;
  rounded_into_ = nullptr;
  mb_rows_known_ = false;
  ndeferred_ = 0;
  streamed_units_ = 0;
  skipped_rows_ = 0;
  std::fill(touched_.begin(), touched_.end(), uint8_t(0));
}

void TravelRuns::add(size_t x, size_t y) {
  if (x >= y) return;
  if (!b.empty() && b.back() == x) {
    b.back() = y;
  } else {
    a.push_back(x);
    b.push_back(y);
    at.push_back(total);
  }
  total += y - x;
}

template <class F>
void TravelRuns::each(size_t p, size_t q, F&& f) const {
  if (p >= q || a.empty()) return;
  size_t i = size_t(std::upper_bound(at.begin(), at.end(), p) - at.begin());
  for (i = i ? i - 1 : 0; i < a.size() && at[i] < q; ++i) {
    const size_t lo = std::max(p, at[i]), hi = std::min(q, at[i] + (b[i] - a[i]));
    if (lo < hi) f(a[i] + (lo - at[i]), a[i] + (hi - at[i]), lo - p);
  }
}

void GradReducer::set_sparse_rows(size_t begin, size_t rows, size_t row_len) {
  OLMO_CHECK(begin + rows * row_len <= layout_.numel, "set_sparse_rows: rows outside the vector");
  sparse_begin_ = begin;
  sparse_rows_ = rows;
  row_len_ = row_len;
  touched_.assign(rows, 0);
  union_.assign(rows, 0);
}

void GradReducer::touch_rows(const int32_t* ids, size_t n) {
  if (!sparse_rows_) return;
  mb_rows_.clear();
  for (size_t i = 0; i < n; ++i) {
    const int64_t id = ids[i];
    OLMO_CHECK(id >= 0 && size_t(id) < sparse_rows_, "touch_rows: id ", id, " outside [0, ",
               sparse_rows_, ")");
    touched_[size_t(id)] = 1;
    mb_rows_.push_back(uint32_t(id));
  }
  std::sort(mb_rows_.begin(), mb_rows_.end());
  mb_rows_.erase(std::unique(mb_rows_.begin(), mb_rows_.end()), mb_rows_.end());
  mb_rows_known_ = true;
}

// acc += q(g) over [0, numel) except the sparse rows this micro-batch did not touch (their g
// is exactly zero: q = 0 leaves acc and seen as they are, so the bits are those of the whole
// pass). Runs of consecutive touched rows are converted together.
uint32_t GradReducer::convert_touched(const float* g, float* clear) {
  const size_t ea = sparse_begin_, eb = sparse_begin_ + sparse_rows_ * row_len_;
  skipped_rows_ += int64_t(sparse_rows_ - mb_rows_.size());
  uint32_t f = scales_.convert(acc_.data(), g, 0, ea, true, seen_, clear);
  for (size_t i = 0; i < mb_rows_.size();) {
    size_t j = i + 1;
    while (j < mb_rows_.size() && mb_rows_[j] == mb_rows_[j - 1] + 1) ++j;
    const size_t a = ea + mb_rows_[i] * row_len_, b = ea + (mb_rows_[j - 1] + 1) * row_len_;
    f |= scales_.convert(acc_.data() + a, g + a, a, b, true, seen_, clear ? clear + a : nullptr);
    i = j;
  }
  return f | scales_.convert(acc_.data() + eb, g + eb, eb, layout_.numel, true, seen_,
                             clear ? clear + eb : nullptr);
}

// The union of every rank's touched rows: one byte per row, 8 to an int64 word, summed over
// ranks (a byte counts at most W <= 255 ranks, so no carry crosses into the next row's byte).
void GradReducer::unite_touched() {
  if (!sparse_rows_) return;
  if (layout_.world == 1) {
    union_ = touched_;
    return;
  }
  std::vector<int64_t> words((sparse_rows_ + 7) / 8, 0);
  std::memcpy(words.data(), touched_.data(), sparse_rows_);
  timed(comm_s_, [&] { comm_.allreduce(words.data(), words.size(), Type::i64, Op::sum); });
  const uint8_t* bytes = reinterpret_cast<const uint8_t*>(words.data());
  for (size_t r = 0; r < sparse_rows_; ++r) {
    union_[r] = bytes[r] != 0;
    skipped_rows_ += !union_[r];
  }
}

std::vector<TravelRuns> GradReducer::travel(size_t a, size_t b, bool sparse) const {
  std::vector<TravelRuns> runs(layout_.world);
  const size_t ea = sparse_begin_, eb = sparse_begin_ + sparse_rows_ * row_len_;
  for (size_t r = 0; r < layout_.world; ++r) {
    const size_t lo = std::max(a, layout_.begin(r)), hi = std::min(b, layout_.end(r));
    if (lo >= hi) continue;
    if (!sparse || !sparse_rows_ || hi <= ea || lo >= eb) {
      runs[r].add(lo, hi);
      continue;
    }
    runs[r].add(lo, std::min(hi, ea));
    const size_t r0 = lo > ea ? (lo - ea) / row_len_ : 0;
    const size_t r1 = std::min(sparse_rows_, (std::min(hi, eb) - ea + row_len_ - 1) / row_len_);
    for (size_t t = r0; t < r1; ++t)
      if (union_[t])
        runs[r].add(std::max(lo, ea + t * row_len_), std::min(hi, ea + (t + 1) * row_len_));
    runs[r].add(std::max(lo, eb), hi);
  }
  return runs;
}

// Bucket k carries the packed elements [k S, (k+1) S) of every rank's runs: fill(r, fa, fb, dst)
// writes rank r's flat elements [fa, fb) into its block; the reduce-scatter sums the blocks over
// ranks; drain(fa, fb, src) takes this rank's reduced flat elements [fa, fb). Two buckets in
// flight (bucket k+1 is staged while bucket k is on the wire).
template <class T, class Fill, class Drain>
void GradReducer::packed_reduce_scatter(Type t, const std::vector<TravelRuns>& runs, Fill fill,
                                        Drain drain) {
  std::vector<T>* stage;
  std::vector<T>* recv;
  if constexpr (std::is_same_v<T, int64_t>) {
    stage = stage_i_;
    recv = recv_i_;
  } else {
    stage = stage_f_;
    recv = recv_f_;
  }
  const size_t S = bucket_, W = layout_.world, me = size_t(comm_.rank());
  size_t longest = 0;
  for (const auto& r : runs) longest = std::max(longest, r.total);
  const size_t nbuckets = (longest + S - 1) / S;
  Communicator::Request req[2];
  int64_t pending[2] = {-1, -1};
  auto complete = [&](int s) {
    if (pending[s] < 0) return;
    timed(comm_s_, [&] { comm_.wait(req[s]); });
    const size_t k = size_t(pending[s]);
    runs[me].each(k * S, (k + 1) * S,
                  [&](size_t fa, size_t fb, size_t off) { drain(fa, fb, recv[s].data() + off); });
    pending[s] = -1;
  };
  for (size_t k = 0; k < nbuckets; ++k) {
    const int s = int(k % 2);
    complete(s);
    for (size_t r = 0; r < W; ++r) {
      T* blk = stage[s].data() + r * S;
      const size_t n = runs[r].total > k * S ? std::min(S, runs[r].total - k * S) : 0;
      runs[r].each(k * S, (k + 1) * S,
                   [&](size_t fa, size_t fb, size_t off) { fill(r, fa, fb, blk + off); });
      std::fill(blk + n, blk + S, T(0));
    }
    {
      AddSeconds in_comm(comm_s_);
      req[s] = comm_.ireduce_scatter(stage[s].data(), recv[s].data(), S, t, Op::sum);  // S values
      // Let the other bucket progress while this one starts.
      if (pending[1 - s] >= 0) comm_.test(req[1 - s]);
    }
    pending[s] = int64_t(k);
  }
  complete(int(nbuckets % 2));
  complete(int((nbuckets + 1) % 2));
}

// The sharded accumulator's micro-batch round over [a, b) of the flat vector (the whole vector
// for add_micro_batch, then without the untouched embedding rows; one unit for add_range):
// rank r's block carries its part of the micro-batch gradient converted from g (g[0] = element
// a); this rank's own block carries its accumulator plus its gradient, so the reduce-scatter
// result is the new accumulator (integer sums: any order, same bits).
void GradReducer::sharded_round(const float* g, size_t a, size_t b, bool sparse) {
  const size_t me = size_t(comm_.rank()), mine = layout_.begin(me);
  const bool whole = a == 0 && b == layout_.numel;
  if (whole) unite_touched();
  sparse = sparse || whole;
  uint32_t flags = 0;
  // The step's first whole-vector round adds to a zero accumulator: its own block is a plain
  // conversion (no copy, no add).
  const bool add_own = !(whole && fresh_);
  if (whole) fresh_ = false;
  packed_reduce_scatter<int64_t>(
      Type::i64, travel(a, b, sparse),
      [&](size_t r, size_t fa, size_t fb, int64_t* dst) {
        const bool add = r == me && add_own;
        if (add) std::copy(acc_.data() + (fa - mine), acc_.data() + (fb - mine), dst);
        flags |= scales_.convert(dst, g + (fa - a), fa, fb, add, seen_);
      },
      [&](size_t fa, size_t fb, const int64_t* src) {
        std::copy(src, src + (fb - fa), acc_.data() + (fa - mine));
      });
  if (whole && sparse_rows_) std::fill(touched_.begin(), touched_.end(), uint8_t(0));
  flags_ |= flags;
}

bool GradReducer::add_micro_batch(const float* g, float* clear, float* round_into) {
  OLMO_CHECK(!clear || clear == g, "add_micro_batch: clear must be g itself or null");
  if (mode_ != ReduceMode::exact) return false;
  if (streamed_ && local_) {  // converted unit by unit during the backward (stream_range)
    // ... except the embedding rows when micro-batches were deferred: converted here, where
    // this micro-batch's rows are known (the stream posts them in finish()).
    if (ndeferred_ > 0 && sparse_rows_) flags_ |= convert_rows(g, stream_add_, nullptr, nullptr);
    ndeferred_ = 0;
    mb_rows_known_ = false;
    fresh_ = false;
    return false;
  }
  if (streamed_) {  // sharded: the rest of the micro-batch's round, then its end
    finish_sharded_stream(g);
    return false;
  }
  if (local_) {  // sum locally; one reduce-scatter in finish()
    // One process: the last micro-batch's new sum is the step's result; round it here.
    float* out = layout_.world == 1 ? round_into : nullptr;
    // A middle micro-batch (adding, not rounding) whose rows touch_rows named skips the
    // embedding rows it did not touch.
    if (ndeferred_ > 0)  // with the deferred micro-batches, in one pass
      flags_ |= convert_deferred(g, !fresh_, clear, out);
    else if (!fresh_ && !out && sparse_rows_ && mb_rows_known_)
      flags_ |= convert_touched(g, clear);
    else
      flags_ |= scales_.convert(acc_.data(), g, 0, layout_.numel, !fresh_, seen_, clear, out);
    mb_rows_known_ = false;
    fresh_ = false;
    rounded_into_ = out;
    return clear != nullptr;
  }
  sharded_round(g, 0, layout_.numel);
  return false;
}

int GradReducer::agree_scales() {
  // One max-reduce carries both flags and every segment's largest exponent: the overflow
  // decision and the next scales are then the same on every rank (global-batch properties).
  std::vector<int64_t> v(seen_.size() + 2);
  v[0] = (flags_ & kOverflow) ? 1 : 0;
  v[1] = (flags_ & kNonFinite) ? 1 : 0;
  std::copy(seen_.begin(), seen_.end(), v.begin() + 2);
  timed(comm_s_, [&] { comm_.allreduce(v.data(), v.size(), Type::i64, Op::max); });
  const bool overflow = v[0] != 0, nonfinite = v[1] != 0;
  // Next scales: this step's exponents, decaying by at most one binade per step (a tensor
  // whose gradient is zero for a step keeps a usable scale).
  std::vector<int64_t> next(scales_.segments());
  for (size_t s = 0; s < next.size(); ++s)
    next[s] = std::max<int64_t>(v[s + 2], std::max<int64_t>(0, scales_.exponents()[s] - 1));
  if (nonfinite || overflow) {
    scales_.set_exponents(next);
    redo_ = overflow && !nonfinite;
    return nonfinite ? 1 : 2;
  }
  next_exponents_ = std::move(next);  // set after the rounding, which uses this step's
  return 0;
}

bool GradReducer::finish(const float* g, float* shard) {
  const size_t W = layout_.world;
  redo_ = false;
  OLMO_CHECK(ndeferred_ == 0, "GradReducer::finish: ", ndeferred_, " deferred micro-batches "
             "without the add_micro_batch that converts them");
  if (streamed_) return finish_streamed(shard);
  if (mode_ == ReduceMode::exact) {
    if (local_ && fresh_)  // no micro-batch this step: sum 0
      std::fill(acc_.begin(), acc_.begin() + layout_.numel, int64_t(0));
    if (const int verdict = agree_scales()) return verdict == 1;
  }
  if (mode_ == ReduceMode::exact && W > 1 && local_) {
    // One integer reduce-scatter of the local accumulators (without the embedding rows no rank
    // touched); each bucket of this rank's shard is rounded to fp32 as it arrives.
    const size_t me = size_t(comm_.rank()), mine = layout_.begin(me);
    unite_touched();
    if (sparse_rows_) std::fill(shard, shard + shard_len(), 0.0f);
    packed_reduce_scatter<int64_t>(
        Type::i64, travel(0, layout_.numel, true),
        [&](size_t, size_t fa, size_t fb, int64_t* dst) {
          std::copy(acc_.data() + fa, acc_.data() + fb, dst);
        },
        [&](size_t fa, size_t fb, const int64_t* src) {
          scales_.to_float(shard + (fa - mine), src, fa, fb);
        });
  } else if (mode_ == ReduceMode::exact && rounded_into_) {
    // One process: the last add_micro_batch rounded the sum (acc_ does not hold it).
    OLMO_CHECK(shard == rounded_into_, "GradReducer::finish: the sum was rounded into another "
               "buffer by add_micro_batch");
  } else if (mode_ == ReduceMode::exact) {
    const size_t at = local_ ? shard_begin() : 0;
    scales_.to_float(shard, acc_.data() + at, shard_begin(), shard_begin() + shard_len());
  } else if (W == 1) {
    if (shard != g) std::memcpy(shard, g, layout_.numel * sizeof(float));
  } else {
    const size_t mine = shard_begin();
    unite_touched();
    if (sparse_rows_) std::fill(shard, shard + shard_len(), 0.0f);
    packed_reduce_scatter<float>(
        Type::f32, travel(0, layout_.numel, true),
        [&](size_t, size_t fa, size_t fb, float* dst) {
          std::memcpy(dst, g + fa, (fb - fa) * sizeof(float));
        },
        [&](size_t fa, size_t fb, const float* src) {
          std::memcpy(shard + (fa - mine), src, (fb - fa) * sizeof(float));
        });
  }
  if (mode_ == ReduceMode::exact) scales_.set_exponents(next_exponents_);
  return false;
}

bool GradReducer::can_stream() const { return layout_.world > 1; }

bool GradReducer::streams(bool last) const {
  return can_stream() && (last || (mode_ == ReduceMode::exact && !local_));
}

void GradReducer::begin_stream(float* g) {
  OLMO_CHECK(can_stream(), "begin_stream: needs more than one process");
  const bool exact = mode_ == ReduceMode::exact;
  if (!stream_) {
    // Chunks of the reduce-scatter bucket's size; 2 x (W - 1) of them in flight per rank. The
    // local accumulator sends its int64 sums; fast and the sharded accumulator send the fp32
    // gradient (4 B per element), which the sharded accumulator's owner converts on arrival.
    const Type t = exact && local_ ? Type::i64 : Type::f32;
    stream_ = std::make_unique<GradStream>(comm_, layout_, t, bucket_, 2 * (layout_.world - 1));
  }
  stream_g_ = g;
  streamed_ = true;
  stream_add_ = !fresh_;
  const size_t mine = shard_begin();
  if (exact && local_) {
    stream_->begin([this](size_t lo, size_t hi, const void* data) {
      add_int64(acc_.data() + lo, static_cast<const int64_t*>(data), hi - lo);
    });
  } else if (exact) {
    // q(x) depends on x and its tensor's scale only, so converting another rank's element here
    // gives the integer its own conversion would have: the same sums, the same bits.
    stream_->begin([this, mine](size_t lo, size_t hi, const void* data) {
      flags_ |= scales_.convert(acc_.data() + (lo - mine), static_cast<const float*>(data), lo,
                                hi, true, seen_);
    });
  } else {
    stream_->begin([this](size_t lo, size_t hi, const void* data) {
      const float* in = static_cast<const float*>(data);
      float* out = stream_g_ + lo;
      for (size_t i = 0; i < hi - lo; ++i) out[i] += in[i];
    });
  }
}

void GradReducer::stream_range(size_t a, size_t b) {
  OLMO_CHECK(streamed_ && stream_->active(), "stream_range outside begin_stream .. finish");
  ++streamed_units_;
  const bool exact = mode_ == ReduceMode::exact;
  const void* src = stream_g_;
  // The row-sparse embedding waits for the touched rows (finish(); sharded: add_micro_batch).
  const size_t ea = sparse_begin_, eb = sparse_begin_ + sparse_rows_ * row_len_;
  if (exact && local_ && ndeferred_ > 0) {  // with the deferred ones; embedding rows: later
    if (!sparse_rows_ || b <= ea || a >= eb) {
      flags_ |= convert_dense(stream_g_, a, b, stream_add_, nullptr, nullptr);
    } else {
      flags_ |= convert_dense(stream_g_, a, std::min(b, ea), stream_add_, nullptr, nullptr);
      flags_ |= convert_dense(stream_g_, std::max(a, eb), b, stream_add_, nullptr, nullptr);
    }
    src = acc_.data();
  } else if (exact && local_) {
    flags_ |= scales_.convert(acc_.data() + a, stream_g_ + a, a, b, stream_add_, seen_);
    src = acc_.data();
  }
  const auto post = [&](size_t x, size_t y) {
    if (x >= y) return;
    if (exact && !local_) {  // this rank's own part joins its shard accumulator here
      const size_t me = size_t(comm_.rank()), mine = layout_.begin(me);
      const size_t lo = std::max(x, mine), hi = std::min(y, layout_.end(me));
      if (lo < hi)
        flags_ |= scales_.convert(acc_.data() + (lo - mine), stream_g_ + lo, lo, hi, true, seen_);
    }
    stream_->post(src, x, y);
  };
  if (!sparse_rows_ || b <= ea || a >= eb) return post(a, b);
  post(a, std::min(b, ea));
  post(std::max(a, eb), b);
}

// The sharded accumulator's streamed micro-batch, after its backward: the embedding's touched
// rows in an integer round (as sharded_round), then the units still in flight.
void GradReducer::finish_sharded_stream(const float* g) {
  const size_t ea = sparse_begin_, eb = sparse_begin_ + sparse_rows_ * row_len_;
  if (sparse_rows_) {
    unite_touched();
    sharded_round(g + ea, ea, eb, /*sparse=*/true);
    std::fill(touched_.begin(), touched_.end(), uint8_t(0));
  }
  stream_->drain();
  streamed_ = false;
  fresh_ = false;
}

bool GradReducer::finish_streamed(float* shard) {
  const bool exact = mode_ == ReduceMode::exact;
  const size_t me = size_t(comm_.rank()), mine = layout_.begin(me);
  const size_t ea = sparse_begin_, eb = sparse_begin_ + sparse_rows_ * row_len_;
  unite_touched();
  if (sparse_rows_) std::fill(shard, shard + shard_len(), 0.0f);
  // The embedding's touched rows, as finish() reduces the whole vector (exact: the sums
  // replace this rank's rows of the accumulator; fast: straight into the shard).
  if (sparse_rows_ && exact) {
    packed_reduce_scatter<int64_t>(
        Type::i64, travel(ea, eb, true),
        [&](size_t, size_t fa, size_t fb, int64_t* dst) {
          std::copy(acc_.data() + fa, acc_.data() + fb, dst);
        },
        [&](size_t fa, size_t fb, const int64_t* src) {
          std::copy(src, src + (fb - fa), acc_.data() + fa);
        });
  } else if (sparse_rows_) {
    packed_reduce_scatter<float>(
        Type::f32, travel(ea, eb, true),
        [&](size_t, size_t fa, size_t fb, float* dst) {
          std::memcpy(dst, stream_g_ + fa, (fb - fa) * sizeof(float));
        },
        [&](size_t fa, size_t fb, const float* src) {
          std::memcpy(shard + (fa - mine), src, (fb - fa) * sizeof(float));
        });
  }
  stream_->drain();  // the sink has added every other rank's part into acc_ / stream_g_
  streamed_ = false;
  if (exact) {
    if (const int verdict = agree_scales()) return verdict == 1;
  }
  // This rank's shard without the untouched embedding rows (zero, filled above).
  const TravelRuns runs = travel(mine, mine + shard_len(), true)[me];
  runs.each(0, runs.total, [&](size_t fa, size_t fb, size_t) {
    if (exact) {
      scales_.to_float(shard + (fa - mine), acc_.data() + fa, fa, fb);
      return;
    }
    // fast: the embedding's rows are in the shard already; the rest is the streamed sum.
    const auto copy = [&](size_t x, size_t y) {
      if (x < y) std::memcpy(shard + (x - mine), stream_g_ + x, (y - x) * sizeof(float));
    };
    if (!sparse_rows_) return copy(fa, fb);
    copy(fa, std::min(fb, ea));
    copy(std::max(fa, eb), fb);
  });
  if (exact) scales_.set_exponents(next_exponents_);
  return false;
}

double GradReducer::global_norm(const float* shard, size_t n) {
  if (mode_ == ReduceMode::fast) {
    double s = optim::sum_squares(shard, n);
    timed(comm_s_, [&] { comm_.allreduce(&s, 1, Op::sum); });
    return std::sqrt(s);
  }
  // exact: the squares' integer mantissas summed per exponent (exact_norm.h), the bins summed
  // over ranks as integers, one rounding in a fixed order: the same value at any world size.
  SquareBins bins{};
  add_square_bins(shard, n, bins);
  timed(comm_s_, [&] { comm_.allreduce(bins.data(), bins.size(), Type::i128, Op::sum); });
  return norm_from_bins(bins);
}

void GradReducer::allgather(float* params) {
  const size_t W = layout_.world, S = bucket_;
  if (W == 1) return;
  AddSeconds in_comm(comm_s_);
  std::vector<Communicator::Request> reqs;
  std::vector<size_t> counts(W), displs(W);
  for (size_t k = 0; k < nbuckets_; ++k) {
    for (size_t r = 0; r < W; ++r) {
      const size_t lo = std::min(layout_.len(r), k * S), hi = std::min(layout_.len(r), (k + 1) * S);
      counts[r] = hi - lo;
      displs[r] = layout_.begin(r) + lo;
    }
    reqs.push_back(comm_.iallgatherv(params, counts, displs, Type::f32));
  }
  for (auto& r : reqs) comm_.wait(r);
}


void GradReducer::gather_range(const float* shard, size_t a, size_t b, float* out) {
  OLMO_CHECK(a <= b && b <= layout_.numel, "gather_range: [", a, ", ", b, ") outside [0, ",
             layout_.numel, ")");
  const size_t W = layout_.world, me = size_t(comm_.rank());
  const Part mine = part_of(layout_, me, a, b);
  if (mine.n)
    std::memcpy(out + (mine.lo - a), shard + (mine.lo - layout_.begin(me)), mine.n * sizeof(float));
  if (W == 1) return;
  std::vector<size_t> counts(W), displs(W);
  for (size_t r = 0; r < W; ++r) {
    const Part p = part_of(layout_, r, a, b);
    counts[r] = p.n;
    displs[r] = p.n ? p.lo - a : 0;
  }
  AddSeconds in_comm(comm_s_);
  Communicator::Request req = comm_.iallgatherv(out, counts, displs, Type::f32);
  comm_.wait(req);
}

void GradReducer::add_range(const float* g, size_t a, size_t b) {
  OLMO_CHECK(mode_ == ReduceMode::exact, "add_range: exact reduction only");
  OLMO_CHECK(a <= b && b <= layout_.numel, "add_range: [", a, ", ", b, ") outside [0, ",
             layout_.numel, ")");
  if (local_) {
    // The step's first range clears the accumulator (ranges arrive in any order, so no
    // first-write shortcut); integer adds from zero give add_micro_batch's bits.
    if (fresh_) {
      std::fill(acc_.begin(), acc_.begin() + layout_.numel, int64_t(0));
      fresh_ = false;
    }
    flags_ |= scales_.convert(acc_.data() + a, g, a, b, true, seen_);
    return;
  }
  sharded_round(g, a, b);
}

}  // namespace olmo::dist
