// ZeRO sharding, bucketed reduce-scatter, exact / fast reductions, all-gather (see zero.h).
#include "distributed/zero.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>

#include "core/error.h"
#include "core/timer.h"
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

GradReducer::GradReducer(Communicator& comm, size_t numel, ReduceMode mode, size_t bucket_elems,
                         bool local_accumulator)
    : comm_(comm), layout_(numel, size_t(comm.world())), mode_(mode),
      local_(local_accumulator || comm.world() == 1) {
  const size_t W = layout_.world;
  bucket_ = std::max<size_t>(16, std::min(layout_.shard_len, (bucket_elems + W - 1) / W));
  nbuckets_ = layout_.shard_len == 0 ? 0 : (layout_.shard_len + bucket_ - 1) / bucket_;
  for (int s = 0; s < 2; ++s) {
    if (mode_ == ReduceMode::exact) {
      stage_i_[s].assign(W * 2 * bucket_, 0);
      recv_i_[s].assign(2 * bucket_, 0);
    } else {
      stage_f_[s].assign(W * bucket_, 0.0f);
      recv_f_[s].assign(bucket_, 0.0f);
    }
  }
  if (mode_ == ReduceMode::exact) {
    const size_t n = local_ ? std::max(numel, nbuckets_ * bucket_) : nbuckets_ * bucket_;
    acc_lo_.assign(n, 0);
    acc_hi_.assign(n, 0);
  }
}

size_t GradReducer::buffer_bytes() const {
  size_t b = (acc_lo_.size() + acc_hi_.size()) * sizeof(uint64_t);
  for (int s = 0; s < 2; ++s)
    b += (stage_i_[s].size() + recv_i_[s].size()) * sizeof(uint64_t) +
         (stage_f_[s].size() + recv_f_[s].size()) * sizeof(float);
  return b;
}

void GradReducer::begin_step() {
  // local: the step's first micro-batch overwrites the accumulator (convert_fixed: 0 + x = x,
  // the same bits), so no 16 B/parameter clear and no read of zeros here.
  if (!local_) {
    std::fill(acc_lo_.begin(), acc_lo_.end(), uint64_t(0));
    std::fill(acc_hi_.begin(), acc_hi_.end(), uint64_t(0));
  }
  fresh_ = true;
  bad_ = false;
}

// For k = 0..nbuckets-1: fill(k, stage) writes bucket k of every rank's shard into
// stage[r * S + i]; the reduce-scatter sums it over ranks into recv; drain(k, recv, n) consumes
// the n valid elements of this rank's slice. Two buckets in flight.
template <class T, class Fill, class Drain>
void GradReducer::bucketed_reduce_scatter(Type t, size_t nbuckets, size_t my_len, Fill fill,
                                          Drain drain) {
  std::vector<T>* stage = mode_ == ReduceMode::exact ? (std::vector<T>*)stage_i_
                                                     : (std::vector<T>*)stage_f_;
  std::vector<T>* recv = mode_ == ReduceMode::exact ? (std::vector<T>*)recv_i_
                                                    : (std::vector<T>*)recv_f_;
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

void GradReducer::add_micro_batch(const float* g) {
  if (mode_ != ReduceMode::exact) return;
  const size_t W = layout_.world, S = bucket_, me = size_t(comm_.rank());
  bool bad = false;
  if (local_) {  // sum locally; one reduce-scatter in finish()
    bad_ = (fresh_ ? convert_fixed(acc_lo_.data(), acc_hi_.data(), g, layout_.numel)
                   : accumulate_fixed(acc_lo_.data(), acc_hi_.data(), g, layout_.numel)) ||
           bad_;
    fresh_ = false;
    return;
  }
  // Rank block r of the staging buffer is [S low words | S high words] of bucket k of shard r.
  // This rank's own block carries its accumulator plus its gradient, so the reduce-scatter
  // result is the new accumulator (integer sums: any order, same bits).
  bucketed_reduce_scatter<uint64_t>(
      Type::fixed128, nbuckets_, layout_.len(me),
      [&](size_t k, uint64_t* st) {
        for (size_t r = 0; r < W; ++r) {
          const size_t lo = std::min(layout_.len(r), k * S), hi = std::min(layout_.len(r), (k + 1) * S);
          const size_t n = hi - lo;
          uint64_t* blo = st + r * 2 * S;
          uint64_t* bhi = blo + S;
          if (r == me) {
            std::copy(acc_lo_.data() + k * S, acc_lo_.data() + k * S + n, blo);
            std::copy(acc_hi_.data() + k * S, acc_hi_.data() + k * S + n, bhi);
            bad |= accumulate_fixed(blo, bhi, g + layout_.begin(r) + lo, n);
          } else {
            bad |= convert_fixed(blo, bhi, g + layout_.begin(r) + lo, n);
          }
          std::fill(blo + n, blo + S, uint64_t(0));
          std::fill(bhi + n, bhi + S, uint64_t(0));
        }
      },
      [&](size_t k, const uint64_t* rv, size_t n) {
        std::copy(rv, rv + n, acc_lo_.data() + k * S);
        std::copy(rv + S, rv + S + n, acc_hi_.data() + k * S);
      });
  bad_ = bad_ || bad;
}

bool GradReducer::finish(const float* g, float* shard) {
  const size_t W = layout_.world, S = bucket_;
  if (mode_ == ReduceMode::exact && local_ && fresh_) {  // no micro-batch this step: sum 0
    std::fill(acc_lo_.begin(), acc_lo_.begin() + layout_.numel, uint64_t(0));
    std::fill(acc_hi_.begin(), acc_hi_.begin() + layout_.numel, uint64_t(0));
  }
  if (mode_ == ReduceMode::exact && W > 1 && local_) {
    // One integer reduce-scatter of the full local accumulators; each bucket of this rank's
    // shard is rounded to fp32 as it arrives.
    bucketed_reduce_scatter<uint64_t>(
        Type::fixed128, nbuckets_, layout_.len(size_t(comm_.rank())),
        [&](size_t k, uint64_t* st) {
          for (size_t r = 0; r < W; ++r) {
            const size_t lo = std::min(layout_.len(r), k * S), hi = std::min(layout_.len(r), (k + 1) * S);
            const size_t n = hi - lo, at = layout_.begin(r) + lo;
            uint64_t* blo = st + r * 2 * S;
            uint64_t* bhi = blo + S;
            std::copy(acc_lo_.data() + at, acc_lo_.data() + at + n, blo);
            std::copy(acc_hi_.data() + at, acc_hi_.data() + at + n, bhi);
            std::fill(blo + n, blo + S, uint64_t(0));
            std::fill(bhi + n, bhi + S, uint64_t(0));
          }
        },
        [&](size_t k, const uint64_t* rv, size_t n) { fixed_to_floats(shard + k * S, rv, rv + S, n); });
  } else if (mode_ == ReduceMode::exact) {
    fixed_to_floats(shard, acc_lo_.data(), acc_hi_.data(), shard_len());
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
  return timed(comm_s_, [&] { return comm_.any(bad_); });
}

double GradReducer::global_norm(const float* shard, size_t n) {
  if (mode_ == ReduceMode::fast) {
    double s = optim::sum_squares(shard, n);
    timed(comm_s_, [&] { comm_.allreduce(&s, 1, Op::sum); });
    return std::sqrt(s);
  }
  // exact: scale by 2^-E with 2^(E-1) <= max|g| < 2^E so every scaled square is < 1, sum the
  // squares in fixed point 2^-90 (P < 2^36 elements cannot overflow), one rounding at the end.
  double mx = 0;
  for (size_t i = 0; i < n; ++i) mx = std::max(mx, double(std::fabs(shard[i])));
  timed(comm_s_, [&] { comm_.allreduce(&mx, 1, Op::max); });
  if (!std::isfinite(mx)) return mx;
  if (mx == 0) return 0;
  const int E = std::ilogb(mx) + 1;
  constexpr int kShift = 90;
  const int64_t nn = int64_t(n);
  i128 sum = 0;
  bool bad = false;
#pragma omp parallel
  {
    i128 part = 0;
    bool b = false;
#pragma omp for schedule(static) nowait
    for (int64_t i = 0; i < nn; ++i) {
      const double x = std::ldexp(double(shard[i]), -E);
      part += to_fixed(x * x, kShift, 1, &b);
    }
#pragma omp critical
    {
      sum += part;  // integer: the order of the threads does not matter
      bad = bad || b;
    }
  }
  OLMO_CHECK(!bad, "exact grad norm: a scaled square out of range (internal error)");
  timed(comm_s_, [&] { comm_.allreduce(&sum, 1, Type::i128, Op::sum); });
  return std::ldexp(std::sqrt(from_fixed(sum, kShift)), E);
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
      std::fill(acc_lo_.begin(), acc_lo_.begin() + layout_.numel, uint64_t(0));
      std::fill(acc_hi_.begin(), acc_hi_.begin() + layout_.numel, uint64_t(0));
      fresh_ = false;
    }
    bad_ = accumulate_fixed(acc_lo_.data() + a, acc_hi_.data() + a, g, b - a) || bad_;
    return;
  }
  // Sharded: bucket k of rank r's block is its part's elements [k S, (k+1) S); this rank's
  // own block carries its accumulator plus its gradient, as in add_micro_batch.
  const size_t W = layout_.world, S = bucket_, me = size_t(comm_.rank());
  size_t longest = 0;
  for (size_t r = 0; r < W; ++r) longest = std::max(longest, part_of(layout_, r, a, b).n);
  const Part mine = part_of(layout_, me, a, b);
  const size_t at = mine.n ? mine.lo - layout_.begin(me) : 0;  // in the shard accumulator
  bool bad = false;
  bucketed_reduce_scatter<uint64_t>(
      Type::fixed128, (longest + S - 1) / S, mine.n,
      [&](size_t k, uint64_t* st) {
        for (size_t r = 0; r < W; ++r) {
          const Part p = part_of(layout_, r, a, b);
          const size_t lo = std::min(p.n, k * S), n = std::min(p.n, (k + 1) * S) - lo;
          uint64_t* blo = st + r * 2 * S;
          uint64_t* bhi = blo + S;
          const float* src = g + (p.lo - a) + lo;
          if (r == me) {
            std::copy(acc_lo_.data() + at + lo, acc_lo_.data() + at + lo + n, blo);
            std::copy(acc_hi_.data() + at + lo, acc_hi_.data() + at + lo + n, bhi);
            bad |= accumulate_fixed(blo, bhi, src, n);
          } else {
            bad |= convert_fixed(blo, bhi, src, n);
          }
          std::fill(blo + n, blo + S, uint64_t(0));
          std::fill(bhi + n, bhi + S, uint64_t(0));
        }
      },
      [&](size_t k, const uint64_t* rv, size_t n) {
        std::copy(rv, rv + n, acc_lo_.data() + at + k * S);
        std::copy(rv + S, rv + S + n, acc_hi_.data() + at + k * S);
      });
  bad_ = bad_ || bad;
}

}  // namespace olmo::dist
