// ZeRO-1/2 data parallelism over one flat fp32 parameter vector of P elements:
//   * ShardLayout: rank r owns [begin(r), end(r)) with a common padded shard length L =
//     ceil(P / W) rounded up to 16 elements (the last shards may be shorter or empty). Each rank
//     keeps AdamW moments (ZeRO-1) and the reduced gradient (ZeRO-2) for its shard only.
//   * GradReducer: turns every rank's full micro-batch gradients into the summed gradient of the
//     rank's shard, with a bucketed, non-blocking reduce-scatter (buckets of S packed elements
//     of every shard: its elements without the input-embedding rows no rank touched (the row-
//     sparse gradient, set_sparse_rows), in flat order; bucket k+1 is converted/staged while
//     bucket k is on the wire, two in flight).
//       exact: each micro-batch gradient is converted to int64 fixed point with one power-of-two
//              scale per parameter tensor (scaled_fixed.h: the scales come from the previous
//              step's max-reduced exponents, an overflow makes every rank redo the step) and
//              summed with integer adds; one rounding to fp32 at the end. Bitwise independent
//              of the world size, of which rank ran which micro-batch and of the reduction
//              order. Two accumulators (dist.exact_accumulator):
//                local: every rank sums its micro-batches into a full-length int64
//                  accumulator (8 B per parameter; all-zero vectors such as untouched
//                  embedding rows are skipped), one integer reduce-scatter per step
//                  (8 * P * (W-1)/W bytes on the wire);
//                sharded (8 B per parameter / W): every micro-batch is reduce-scattered at
//                  once into the shard accumulator (the same bytes per micro-batch round;
//                  every rank must run the same number of micro-batches).
//                auto (default): local_accumulator() below picks one.
//       fast:  the model accumulates micro-batches locally in fp32; one fp32 reduce-scatter per
//              step (4 * P * (W-1)/W bytes). Rounding depends on the world size.
//   * global_norm(): the L2 norm of the distributed gradient; exact mode sums the squares as
//     integers binned by exponent (exact_norm.h: order-free), fast mode in double.
//   * allgather(): every rank's updated parameter shard to every rank (bucketed, in place).
//   * ZeRO-3 (parameters sharded too; the caller cuts the flat vector into ranges, e.g. one
//     transformer block): gather_range() assembles the parameters [a, b) on every rank from
//     the ranks' shards; add_range() adds one micro-batch's gradient of [a, b) to the exact sum
//     (local: into the local accumulator; sharded: an integer reduce-scatter of just that
//     range into its owners' accumulators). The sums are the same integers as add_micro_batch's
//     over the whole vector, so finish() gives the same bits as ZeRO-2.
// The model knows nothing of this: it writes one full fp32 gradient buffer per micro-batch.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "distributed/communicator.h"
#include "distributed/fixed_point.h"
#include "distributed/reduce_settings.h"
#include "distributed/scaled_fixed.h"

namespace olmo::dist {

struct ShardLayout {
  size_t numel = 0, world = 1, shard_len = 0;
  ShardLayout() = default;
  ShardLayout(size_t numel, size_t world);
  size_t begin(size_t r) const { return std::min(numel, r * shard_len); }
  size_t end(size_t r) const { return std::min(numel, (r + 1) * shard_len); }
  size_t len(size_t r) const { return end(r) - begin(r); }
};

// ReduceMode, dist.exact_accumulator and local_accumulator(): distributed/reduce_settings.h.

// The elements of one rank that travel in a reduction: flat runs [a[i], b[i]) in order, run i
// at packed offset at[i]; total packed elements.
struct TravelRuns {
  std::vector<size_t> a, b, at;
  size_t total = 0;
  void add(size_t x, size_t y);  // appends [x, y) (merged with the last run when adjacent)
  // f(flat_a, flat_b, offset) for the pieces of the packed range [p, q), offset from p.
  template <class F>
  void each(size_t p, size_t q, F&& f) const;
};

class GradStream;

class GradReducer {
 public:
  // bucket_elems: elements per bucket summed over all ranks (>= world). segments: the exact
  // mode's scale segments as bounds (0, ..., numel; e.g. the parameter tensors); empty = one.
  GradReducer(Communicator& comm, size_t numel, ReduceMode mode, size_t bucket_elems,
              bool local_accumulator = true, std::vector<size_t> segments = {});
  ~GradReducer();

  const ShardLayout& layout() const { return layout_; }
  ReduceMode mode() const { return mode_; }
  bool local() const { return local_; }  // exact: the local (true) or sharded accumulator
  size_t shard_begin() const { return layout_.begin(size_t(comm_.rank())); }
  size_t shard_len() const { return layout_.len(size_t(comm_.rank())); }

  // Start of a step (or of its redo): resets the accumulator (local: the first add_micro_batch
  // overwrites it) and the flags. global_instances: the instances of the global batch (an upper
  // bound on its micro-batches, the same at every world size; sets the scales' value bits).
  void begin_step(int64_t global_instances = 1);
  // exact mode: one micro-batch's full gradient g[P] (this rank's) joins the sum; g may be
  // reused afterwards. Every rank calls it equally often per step. fast mode: no-op (the model
  // accumulates in place).
  // Fusions into the conversion pass where this call converts all of g (exact, local
  // accumulator, not streamed; same bits as without):
  //   clear (null or g itself): g is zeroed as it is read, for a caller whose next backward
  //   accumulates into g (saves a 4 B/parameter clear pass). Returns whether g was zeroed
  //   (false: the caller clears it).
  //   round_into (null or shard[shard_len()]): only with the rank's last micro-batch of the
  //   step and only honoured at one process: the step's sum is rounded into round_into in the
  //   same pass instead of being stored (saves finish()'s read of the 8 B/parameter
  //   accumulator); finish() must then get the same shard and skips its rounding.
  bool add_micro_batch(const float* g, float* clear = nullptr, float* round_into = nullptr);
  // exact, local accumulator, in place of add_micro_batch for a micro-batch of the rank's step
  // but its last (after its touch_rows): its gradient `kept` (a copy the caller keeps unchanged
  // until finish) joins the sum in the conversion pass of the next add_micro_batch, with every
  // other micro-batch deferred so far: acc = q(kept_1) + ... + q(kept_k) + q(g) per element
  // (integer adds: the same bits, flags and exponents as k + 1 add_micro_batch calls) in one
  // pass that reads 4 B per element per gradient and writes the accumulator (one process:
  // the rounded shard) once, instead of a read-modify-write of the accumulator per
  // micro-batch. The embedding rows are converted from the gradients whose tokens touched them
  // only (a kept copy's other rows may hold anything). With the stream (the last micro-batch
  // streamed, dist.overlap), stream_range converts the deferred ones with each unit.
  void defer_micro_batch(const float* kept);
  // Writes the step's summed gradient of this rank's shard into shard[shard_len()] (fast: g[P]
  // holds this rank's locally accumulated gradient). Returns true when any rank saw a
  // non-finite gradient element (then shard's content is unspecified). exact: when any rank
  // saw an element beyond its segment's scale, redo() is true afterwards (shard unspecified;
  // the scales are already raised to fit this step's gradients: run the step again from
  // begin_step). Either way the scales for the next step are set from this step's exponents.
  bool finish(const float* g, float* shard);

  // Overlap (dist.overlap): a micro-batch's gradient is streamed while its backward runs
  // (grad_stream.h), for W > 1: the local exact accumulator and fast stream the rank's last
  // micro-batch of the step (int64 sums / fp32); the sharded exact accumulator streams every
  // micro-batch as fp32 (4 B per element on the wire instead of 8: the owner converts each
  // arriving element with the tensor's scale, which gives the sender's integer). Protocol:
  // begin_stream(g) before the micro-batch's backward (g[P]: the model's gradient buffer);
  // stream_range(a, b) as the backward completes the unit [a, b) (posts it, except the
  // row-sparse embedding, reduced once the touched rows are known: in add_micro_batch for
  // the sharded accumulator, in finish() otherwise); each post also drives the earlier ones. The
  // results have the same bits as without the stream (the same integer sums; fast: the same
  // summation order), tested in tests/distributed/world_size_test.py.
  bool can_stream() const;
  // Whether the micro-batch (last: the rank's last of the step) is streamed.
  bool streams(bool last) const;
  void begin_stream(float* g);
  void stream_range(size_t a, size_t b);
  bool redo() const { return redo_; }
  // exact: the per-segment scale state (previous step's exponents), for the checkpoint.
  const SegmentScales& scales() const { return scales_; }
  void set_scale_exponents(const std::vector<int64_t>& e) { scales_.set_exponents(e); }

  // Row-sparse part: rows x row_len elements from `begin` (the input embedding), whose rows get a
  // gradient only for the token ids of the micro-batch. The reductions of the whole vector
  // (exact local and sharded accumulators, fast) then carry only the rows some rank touched,
  // in row order; the others are exactly zero on every rank. touch_rows(ids) marks a
  // micro-batch's ids: call it for every micro-batch, before its add_micro_batch (the local
  // accumulator then converts only those rows of the micro-batch's gradient when it adds, not
  // stores or rounds: per instance that skips most of a large vocabulary's rows).
  void set_sparse_rows(size_t begin, size_t rows, size_t row_len);
  void touch_rows(const int32_t* ids, size_t n);

  // L2 norm of the global gradient given each rank's shard (same value on every rank).
  double global_norm(const float* shard, size_t n);
  // In place: params[P] on every rank gets every rank's shard [begin(r), end(r)).
  void allgather(float* params);

  // ZeRO-3 (exact mode). out[b - a] on every rank = elements [a, b) of the flat parameter
  // vector, gathered from every rank's shard (this rank's: shard[shard_len()]). Collective.
  void gather_range(const float* shard, size_t a, size_t b, float* out);
  // One micro-batch's gradient g[b - a] of the range [a, b) joins the step's sum. Per
  // micro-batch the ranges a rank adds tile [0, P) once; every rank adds the same ranges in the
  // same order (sharded accumulator: collective).
  void add_range(const float* g, size_t a, size_t b);

  // This step's counts (reset by begin_step, so a redo counts its own pass), for metrics and
  // for tests that the paths engage: units of the gradient posted to the stream while the
  // backward ran (overlap), and embedding rows skipped by the row-sparse path (rows a
  // micro-batch's conversion left out, summed over micro-batches, plus, on more than one
  // process, rows of the step's reduction left off the wire because no rank touched them).
  int64_t streamed_units() const { return streamed_units_; }
  int64_t skipped_rows() const { return skipped_rows_; }

  // Bytes allocated for accumulators and staging (memory plan test).
  size_t buffer_bytes() const;
  // Seconds spent inside communication calls (waits, starts, allreduce) since construction.
  double comm_seconds() const;

 private:
  friend struct GradReducerProbe;  // tests/distributed/grad_stream_test.cpp: travel, union
  // nbuckets buckets of S elements per rank; my_len: the valid elements of this rank's slice.
  template <class T, class Fill, class Drain>
  void packed_reduce_scatter(Type t, const std::vector<TravelRuns>& runs, Fill fill, Drain drain);
  // Every rank's runs of [a, b) (sparse: without the untouched rows of the union).
  std::vector<TravelRuns> travel(size_t a, size_t b, bool sparse) const;
  void unite_touched();  // union_ = the touched rows of every rank (collective)
  // The sharded accumulator's round for g = the micro-batch gradient of [a, b) (collective;
  // sparse: without the embedding rows no rank touched, whose union is known).
  void sharded_round(const float* g, size_t a, size_t b, bool sparse = false);
  void finish_sharded_stream(const float* g);
  // exact: agrees the overflow / non-finite flags and the next scales over ranks (one
  // max-reduce); returns 0 (go on), 1 (non-finite) or 2 (overflow: redo_ set).
  int agree_scales();
  bool finish_streamed(float* shard);
  // The local accumulator's conversion of a micro-batch without its untouched sparse rows.
  uint32_t convert_touched(const float* g, float* clear);
  // The deferred micro-batches and g (g[0] = flat element 0) over [a, b) outside the embedding
  // rows (acc indexed from 0; out: null or the one-process shard, indexed from 0).
  uint32_t convert_dense(const float* g, size_t a, size_t b, bool add, float* clear, float* out);
  // The same over the embedding rows: each row from the gradients that touched it (g: the rows
  // of the last touch_rows), the untouched rows stored as 0 (or, add, left / rounded).
  uint32_t convert_rows(const float* g, bool add, float* clear, float* out);
  // Every deferred micro-batch and g over the whole vector.
  uint32_t convert_deferred(const float* g, bool add, float* clear, float* out);

  Communicator& comm_;
  ShardLayout layout_;
  ReduceMode mode_;
  size_t bucket_ = 0;   // S: elements of each shard per bucket
  size_t nbuckets_ = 0;
  // exact: int64 accumulator (local: numel; sharded: nbuckets * S of this rank's shard)
  std::vector<int64_t> acc_;
  std::vector<int64_t> stage_i_[2], recv_i_[2];  // W blocks of S / one block of S
  std::vector<float> stage_f_[2], recv_f_[2];
  SegmentScales scales_;
  std::vector<int64_t> seen_;  // this step's largest exponent per segment (this rank)
  std::vector<int64_t> next_exponents_;  // the next step's, set once this step is rounded
  uint32_t flags_ = 0;         // kOverflow / kNonFinite seen by this rank this step
  bool redo_ = false;
  size_t sparse_begin_ = 0, sparse_rows_ = 0, row_len_ = 0;
  std::vector<uint8_t> touched_, union_;  // per sparse row: this rank's / any rank's
  std::vector<uint32_t> mb_rows_;         // the rows of the last touch_rows (sorted, unique)
  bool mb_rows_known_ = false;            // set by touch_rows, used by the next add_micro_batch
  struct Deferred {                       // defer_micro_batch: a gradient and its touched rows
    const float* g = nullptr;
    std::vector<uint32_t> rows;
    bool all_rows = false;                // touch_rows not called: every row
  };
  std::vector<Deferred> deferred_;        // [0, ndeferred_) this step's (storage reused)
  size_t ndeferred_ = 0;
  std::vector<uint64_t> row_src_;         // convert_rows' (row << 32 | source) pairs
  std::vector<const float*> srcs_;        // convert_rows' / convert_dense's source pointers
  bool local_ = true;   // exact: full-length local accumulator, one reduction per step
  bool fresh_ = true;   // local: no micro-batch added since begin_step (accumulator stale)
  std::unique_ptr<GradStream> stream_;  // overlap: the exchange in flight during the backward
  float* stream_g_ = nullptr;            // the streamed micro-batch's gradient buffer
  bool streamed_ = false;                // this step's last micro-batch was streamed
  float* rounded_into_ = nullptr;        // one process: the last add_micro_batch rounded here
  bool stream_add_ = false;              // exact: its conversion adds (false: first, stores)
  double comm_s_ = 0;
  int64_t streamed_units_ = 0, skipped_rows_ = 0;  // this step's (streamed_units(), ...)
};

}  // namespace olmo::dist
