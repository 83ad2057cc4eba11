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

size_t GradReducer::buffer_bytes() const {
  size_t b = acc_.size() * sizeof(int64_t);
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
}

// For k = 0..nbuckets-1: fill(k, stage) writes bucket k of every rank's shard into
// stage[r * S + i]; the reduce-scatter sums it over ranks into recv; drain(k, recv, n) consumes
// the n valid elements of this rank's slice. Two buckets in flight.
template <class T, class Fill, class Drain>
void GradReducer::bucketed_reduce_scatter(Type t, size_t nbuckets, size_t my_len, Fill fill,
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
  const size_t S = bucket_;
  Communicator::Request req[2];
  int64_t pending[2] = {-1, -1};
  auto complete = [&](int s) {
    if (pending[s] < 0) return;
    timed(comm_s_, [&] { comm_.wait(req[s]); });
    const size_t k = size_t(pending[s]);
    const size_t lo = std::min(my_len, k * S), hi = std::min(my_len, (k + 1) * S);
    drain(k, recv[s].data(), hi - lo);
    pending[s] = -1;
  };
  for (size_t k = 0; k < nbuckets; ++k) {
    const int s = int(k % 2);
    complete(s);
    fill(k, stage[s].data());
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

// The sharded accumulator's micro-batch round over the part [a, b) of the flat vector (the whole
// vector for add_micro_batch, one unit for add_range): rank block r of bucket k holds rank r's
// part elements [k S, (k+1) S) converted from g (g[0] = element a); this rank's own block
// carries its accumulator plus its gradient, so the reduce-scatter result is the new
// accumulator (integer sums: any order, same bits).
void GradReducer::sharded_round(const float* g, size_t a, size_t b) {
  const size_t W = layout_.world, S = bucket_, me = size_t(comm_.rank());
  size_t longest = 0;
  for (size_t r = 0; r < W; ++r) longest = std::max(longest, part_of(layout_, r, a, b).n);
  const Part mine = part_of(layout_, me, a, b);
  const size_t at = mine.n ? mine.lo - layout_.begin(me) : 0;  // in the shard accumulator
  uint32_t flags = 0;
  bucketed_reduce_scatter<int64_t>(
      Type::i64, (longest + S - 1) / S, mine.n,
      [&](size_t k, int64_t* st) {
        for (size_t r = 0; r < W; ++r) {
          const Part p = part_of(layout_, r, a, b);
          const size_t lo = std::min(p.n, k * S), n = std::min(p.n, (k + 1) * S) - lo;
          int64_t* blk = st + r * S;
          const size_t flat = p.lo + lo;
          if (r == me) {
            std::copy(acc_.data() + at + lo, acc_.data() + at + lo + n, blk);
            flags |= scales_.convert(blk, g + (flat - a), flat, flat + n, true, seen_);
          } else {
            flags |= scales_.convert(blk, g + (flat - a), flat, flat + n, false, seen_);
          }
          std::fill(blk + n, blk + S, int64_t(0));
        }
      },
      [&](size_t k, const int64_t* rv, size_t n) {
        std::copy(rv, rv + n, acc_.data() + at + k * S);
      });
  flags_ |= flags;
}

void GradReducer::add_micro_batch(const float* g) {
  if (mode_ != ReduceMode::exact) return;
  if (local_) {  // sum locally; one reduce-scatter in finish()
    flags_ |= scales_.convert(acc_.data(), g, 0, layout_.numel, !fresh_, seen_);
    fresh_ = false;
    return;
  }
  sharded_round(g, 0, layout_.numel);
}

bool GradReducer::finish(const float* g, float* shard) {
  const size_t W = layout_.world, S = bucket_;
  redo_ = false;
  if (mode_ == ReduceMode::exact) {
    if (local_ && fresh_)  // no micro-batch this step: sum 0
      std::fill(acc_.begin(), acc_.begin() + layout_.numel, int64_t(0));
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
      return nonfinite;
    }
    next_exponents_ = std::move(next);  // after the rounding below, which uses this step's
  }
  if (mode_ == ReduceMode::exact && W > 1 && local_) {
    // One integer reduce-scatter of the full local accumulators; each bucket of this rank's
    // shard is rounded to fp32 as it arrives.
    const size_t me = size_t(comm_.rank());
    bucketed_reduce_scatter<int64_t>(
        Type::i64, nbuckets_, layout_.len(me),
        [&](size_t k, int64_t* st) {
          for (size_t r = 0; r < W; ++r) {
            const size_t lo = std::min(layout_.len(r), k * S), hi = std::min(layout_.len(r), (k + 1) * S);
            const size_t n = hi - lo, at = layout_.begin(r) + lo;
            int64_t* blk = st + r * S;
            std::copy(acc_.data() + at, acc_.data() + at + n, blk);
            std::fill(blk + n, blk + S, int64_t(0));
          }
        },
        [&](size_t k, const int64_t* rv, size_t n) {
          const size_t at = layout_.begin(me) + k * S;
          scales_.to_float(shard + k * S, rv, at, at + n);
        });
  } else if (mode_ == ReduceMode::exact) {
    const size_t at = local_ ? shard_begin() : 0;
    scales_.to_float(shard, acc_.data() + at, shard_begin(), shard_begin() + shard_len());
  } else if (W == 1) {
    if (shard != g) std::memcpy(shard, g, layout_.numel * sizeof(float));
  } else {
    bucketed_reduce_scatter<float>(
        Type::f32, nbuckets_, layout_.len(size_t(comm_.rank())),
        [&](size_t k, float* st) {
          for (size_t r = 0; r < W; ++r) {
            const size_t lo = std::min(layout_.len(r), k * S), hi = std::min(layout_.len(r), (k + 1) * S);
            std::memcpy(st + r * S, g + layout_.begin(r) + lo, (hi - lo) * sizeof(float));
            std::fill(st + r * S + (hi - lo), st + (r + 1) * S, 0.0f);
          }
        },
        [&](size_t k, const float* rv, size_t n) {
          std::memcpy(shard + k * S, rv, n * sizeof(float));
        });
  }
  if (mode_ == ReduceMode::exact) scales_.set_exponents(next_exponents_);
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
