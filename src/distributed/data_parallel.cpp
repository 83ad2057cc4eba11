// DataParallel: accumulation, reduction, ZeRO sharding and loss sums of W ranks (see
// data_parallel.h).
#include "distributed/data_parallel.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/profile.h"
#include "core/timer.h"
#include "core/token_ids.h"
#include "distributed/zero3_params.h"
#include "model/olmo3.h"

namespace olmo::dist {

namespace {
// Profile row `name` (trainer.profile) gets the wall time of its scope minus the communication
// inside it (those waits are the "comm" row).
class ProfileOutsideComm {
 public:
  ProfileOutsideComm(const char* name, const DataParallel& dp)
      : name_(name), dp_(dp), t0_(now_seconds()), c0_(dp.comm_seconds()) {}
  ~ProfileOutsideComm() {
    if (profile::enabled())
      profile::add(name_, now_seconds() - t0_ - (dp_.comm_seconds() - c0_), 0);
  }
  ProfileOutsideComm(const ProfileOutsideComm&) = delete;
  ProfileOutsideComm& operator=(const ProfileOutsideComm&) = delete;

 private:
  const char* name_;
  const DataParallel& dp_;
  double t0_, c0_;
};
}  // namespace

DataParallel::DataParallel(Communicator& comm, model::Olmo3& model, const DataParallelOptions& o)
    : comm_(comm), model_(model), o_(o) {
  // The exact reduction's scale segments: one per parameter tensor, in flat order.
  std::vector<size_t> bounds;
  for (const auto& p : model_.layout().info) bounds.push_back(p.offset);
  std::sort(bounds.begin(), bounds.end());
  bounds.push_back(model_.num_params());
  reducer_ = std::make_unique<GradReducer>(comm_, model_.num_params(), o.reduce, o.bucket_elems,
                                           o.exact_local, bounds);
  // The input embedding's gradient is row-sparse: only the batch's token ids get one.
  const model::ModelConfig& mc = model_.config();
  reducer_->set_sparse_rows(model_.layout().embed, size_t(mc.vocab_size), size_t(mc.d_model));
  if (!(o.reduce == ReduceMode::fast && comm_.world() == 1))
    shard_grad_.assign(reducer_->shard_len(), 0.0f);
  if (o.zero_stage == 3) zero3_ = std::make_unique<Zero3Params>(*reducer_, model_);
}

DataParallel::~DataParallel() = default;

double DataParallel::comm_seconds() const { return reducer_->comm_seconds() + comm_s_; }

void DataParallel::shard_parameters() {
  if (!zero3_ || sharded_) return;
  zero3_->attach(model_);
  sharded_ = true;
}

float* DataParallel::sharded_params() { return sharded_ ? zero3_->shard() : nullptr; }
const float* DataParallel::sharded_params() const { return sharded_ ? zero3_->shard() : nullptr; }

float* DataParallel::param_shard() {
  return sharded_ ? zero3_->shard() : model_.params() + reducer_->shard_begin();
}

DataParallel::Counts DataParallel::count(const int32_t* targets, int64_t B, int64_t T,
                                         int64_t step) {
  Counts c;
  for (int64_t i = 0; i < B * T; ++i) c.local += targets[i] != olmo::kIgnoreIndex;
  int64_t v[2] = {c.local, B};
  int64_t most = B;
  const bool empty_rank = timed(comm_s_, [&] {
    comm_.allreduce(v, 2);
    if (comm_.world() > 1) comm_.allreduce(&most, 1, Op::max);
    return o_.per_rank_loss && comm_.any(c.local == 0);
  });
  c.total = v[0];
  c.global_instances = v[1];
  c.max_rank_instances = most;
  OLMO_CHECK(c.total > 0, "step ", step, ": the batch has no target tokens");
  OLMO_CHECK(!empty_rank, "step ", step, ": a rank has no target tokens (per_rank loss "
             "normalisation needs some on every rank)");
  return c;
}

float DataParallel::grad_scale(const Counts& c) const {
  const double divisor =
      o_.per_rank_loss ? double(comm_.world()) * double(c.local) : double(c.total);
  return float(1.0 / divisor);
}

bool DataParallel::equal_rounds() const {
  return o_.reduce == ReduceMode::exact && (!reducer_->local() || zero3_ != nullptr);
}

void DataParallel::begin_pass(const Counts& c) {
  OLMO_CHECK(!zero3_ || sharded_, "DataParallel: ZeRO-3 before shard_parameters()");
  reducer_->begin_step(c.global_instances);
  if (sharded_) zero3_->set_open(true);
  if (!sharded_) model_.zero_grad();
  grad_cleared_ = false;
  ce_fx_ = z_fx_ = 0;
  sums_[0] = sums_[1] = 0;
  loss_bad_ = false;
}

void DataParallel::before_micro_batch(int64_t i, bool last) {
  // exact: every micro-batch's gradient is converted on its own, so the model's fp32 gradient
  // starts from zero each time (fast accumulates across micro-batches in place); usually the
  // previous micro-batch's conversion cleared it already (grad_cleared_).
  last_ = last;
  if (reducer_->mode() == ReduceMode::exact && i > 0 && !sharded_ && !grad_cleared_) {
    const double tz = now_seconds();
    model_.zero_grad();
    if (profile::enabled()) profile::add("exact_zero_grad", now_seconds() - tz, 0);
  }
  // Overlap: each unit's gradient of the last micro-batch goes on the wire as the backward
  // finishes it (exact: converted first); the exchange completes in reduce().
  streaming_ = o_.overlap && !sharded_ && reducer_->streams(last);
  if (streaming_) reducer_->begin_stream(model_.grads());
}

void DataParallel::unit_grad_done(size_t a, size_t b) {
  if (!streaming_) return;
  ProfileOutsideComm prof(reducer_->mode() == ReduceMode::exact ? "exact_convert" : "reduce_post",
                          *this);
  reducer_->stream_range(a, b);
}

void DataParallel::after_micro_batch(const int32_t* tokens, int64_t n,
                                     const kernels::LossSums& s, const float* kept) {
  streaming_ = false;
  reducer_->touch_rows(tokens, size_t(n));
  if (reducer_->mode() == ReduceMode::exact) {
    ce_fx_ += double_to_fixed(s.ce_sum, &loss_bad_);
    z_fx_ += double_to_fixed(s.z_sum, &loss_bad_);
    // Conversion to fixed point + accumulator adds (sharded: + staging). ZeRO-3 added each
    // unit's gradient inside the backward already (Zero3Params::grad_done).
    // Fused into that pass: the clear of the gradient for the next micro-batch, and (one
    // process, last micro-batch) the rounding of the step's sum into the shard.
    ProfileOutsideComm prof("exact_convert", *this);
    if (kept) {  // converted with the rank's last micro-batch (keep() cleared the gradient)
      reducer_->defer_micro_batch(kept);
      grad_cleared_ = true;
    } else if (!sharded_) {
      grad_cleared_ = reducer_->add_micro_batch(model_.grads(), last_ ? nullptr : model_.grads(),
                                                last_ ? shard_grad_.data() : nullptr);
    }
  } else {
    sums_[0] += s.ce_sum;
    sums_[1] += s.z_sum;
  }
}

DataParallel::Reduced DataParallel::gradient(const Counts& c, const int32_t* tokens, int64_t B,
                                             int64_t T, int64_t step,
                                             const ForwardBackward& forward_backward,
                                             const UnitDone& unit_done) {
  const float scale = grad_scale(c);
  // exact: one instance per forward/backward (per_instance); fast: micro-batches of
  // micro_instances. Rounds past this rank's own micro-batches are padding (equal_rounds).
  const int64_t mi = per_instance() ? 1 : std::max<int64_t>(1, o_.micro_instances);
  const int64_t own = (B + mi - 1) / mi;
  const int64_t rounds =
      equal_rounds() ? std::max(own, (c.max_rank_instances + mi - 1) / mi) : own;
  const bool measuring = !scales_known();
  MicroBatch mb;
  // Each unit's gradient, as the backward finishes it: the caller's observer, the record of a
  // kept micro-batch, then the reduction (which may put it on the wire at once).
  model_.set_grad_done_hook([&](int64_t, size_t a, size_t b) {
    if (mb.report && unit_done) unit_done(mb.index, a, b);
    if (keeping_) kept_units_[size_t(mb.index)].emplace_back(a, b);
    unit_grad_done(a, b);
  });
  struct ClearHook {
    model::Olmo3& m;
    ~ClearHook() { m.set_grad_done_hook(nullptr); }
  } clear_hook{model_};
  int64_t rescales = 0, recomputes = 0;
  bool replaying = false;  // this pass replays the kept gradients of the first
  for (int pass = 0;; ++pass) {
    keeping_ = pass == 0 && keep_gradients(rounds);
    begin_pass(c);
    for (int64_t i = 0; i < rounds; ++i) {
      const bool padding = i >= own;
      mb.index = i;
      mb.first = padding ? 0 : i * mi;
      mb.n = padding ? 1 : std::min(mi, B - i * mi);
      mb.grad_scale = padding ? 0.0f : scale;
      mb.report = pass == 0 && !padding;
      before_micro_batch(i, i + 1 == rounds);
      if (keeping_) kept_units_[size_t(i)].clear();
      const kernels::LossSums s = replaying ? replay(i) : forward_backward(mb);
      // A kept micro-batch but the rank's last is converted with the last, from its copy
      // (GradReducer::defer_micro_batch: one pass over the accumulator per step).
      const bool defer = keeping_ && reducer_->local() && i + 1 < rounds;
      if (keeping_) keep(i, tokens + mb.first * T, padding ? -1 : mb.n * T, s, defer);
      const float* kept = defer ? kept_[size_t(i)].data() : nullptr;
      if (padding)
        after_micro_batch(tokens, 0, kernels::LossSums{}, kept);
      else
        after_micro_batch(tokens + mb.first * T, mb.n * T, s, kept);
    }
    PassResult r = reduce(c);
    if (!r.redo) {
      r.out.rescales = rescales;
      r.out.recomputes = recomputes;
      keeping_ = false;
      return r.out;
    }
    ++rescales;
    replaying = keeping_;
    if (!replaying) ++recomputes;
    OLMO_CHECK(pass < 2, "step ", step, ": the exact reduction still overflowed after ", pass + 1,
               " rescales (internal error)");
    // A segment's first rescale arms the kept gradients for its later steps.
    keep_armed_ = true;
    if (comm_.rank() == 0 && !(measuring && pass == 0))
      std::fprintf(stderr, "step %lld: exact reduction rescaled (a gradient outgrew its tensor's "
                   "scale); %s (rescale %lld of the run)\n", static_cast<long long>(step),
                   replaying ? "the kept gradients are converted again" : "the step is recomputed",
                   static_cast<long long>(redos_));
  }
}

bool DataParallel::keep_gradients(int64_t rounds) {
  if (!keep_armed_ || o_.reduce != ReduceMode::exact || zero3_) return false;
  const size_t P = model_.num_params();
  if (size_t(rounds) * P * sizeof(float) > o_.keep_limit_bytes) return false;
  if (kept_.size() < size_t(rounds)) {
    kept_.resize(size_t(rounds));
    kept_sums_.resize(size_t(rounds));
    kept_units_.resize(size_t(rounds));
    kept_rows_.resize(size_t(rounds));
    kept_all_rows_.resize(size_t(rounds));
  }
  for (auto& k : kept_) k.resize(P);
  return true;
}

// dst = src over [0, P) except the input embedding's rows not in `rows` (all rows when
// rows_all): those are zero in the model's gradient of a micro-batch (only its token ids get
// an embedding gradient), so the copy skips most of a large vocabulary's rows.
void DataParallel::copy_gradient(float* dst, const float* src, const std::vector<uint32_t>& rows,
                                 bool rows_all, float* clear) const {
  const size_t P = model_.num_params(), D = size_t(model_.config().d_model);
  const size_t ea = model_.layout().embed, eb = ea + size_t(model_.config().vocab_size) * D;
  constexpr size_t kChunk = size_t(1) << 14;  // the clear writes a chunk still in cache
  const auto copy = [&](size_t a, size_t b) {
    for (size_t c = a; c < b; c += kChunk) {
      const size_t e = std::min(b, c + kChunk);
      std::memcpy(dst + c, src + c, (e - c) * sizeof(float));
      if (clear) std::memset(clear + c, 0, (e - c) * sizeof(float));
    }
  };
  if (rows_all) return copy(0, P);
  copy(0, ea);
  for (uint32_t r : rows) copy(ea + r * D, ea + (r + 1) * D);
  copy(eb, P);
}

void DataParallel::keep(int64_t i, const int32_t* tokens, int64_t n, const kernels::LossSums& s,
                        bool clear) {
  const double t0 = now_seconds();
  std::vector<uint32_t>& rows = kept_rows_[size_t(i)];
  rows.assign(tokens, tokens + std::max<int64_t>(n, 0));
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  OLMO_CHECK(rows.empty() || rows.back() < uint32_t(model_.config().vocab_size), "token id ",
             int32_t(rows.back()), " outside the vocabulary");
  kept_all_rows_[size_t(i)] = n < 0;
  copy_gradient(kept_[size_t(i)].data(), model_.grads(), rows, n < 0,
                clear ? model_.grads() : nullptr);
  kept_sums_[size_t(i)] = s;
  if (profile::enabled()) profile::add("exact_keep", now_seconds() - t0, 0);
}

// The model's gradient buffer is zero here (begin_pass, or the previous micro-batch's
// conversion or before_micro_batch cleared it), as before a backward.
kernels::LossSums DataParallel::replay(int64_t i) {
  copy_gradient(model_.grads(), kept_[size_t(i)].data(), kept_rows_[size_t(i)],
                kept_all_rows_[size_t(i)]);
  for (const auto& u : kept_units_[size_t(i)]) unit_grad_done(u.first, u.second);
  return kept_sums_[size_t(i)];
}

size_t DataParallel::kept_bytes() const {
  size_t b = 0;
  for (const auto& k : kept_) b += k.size() * sizeof(float);
  return b;
}

DataParallel::PassResult DataParallel::reduce(const Counts& c) {
  PassResult res;
  Reduced& out = res.out;
  if (sharded_) zero3_->set_open(false);
  out.grad = shard_grad_.empty() ? model_.grads() : shard_grad_.data();
  out.n = reducer_->shard_len();
  {
    // Staging, unpacking and rounding of the step's reduction.
    ProfileOutsideComm prof("reduce_finish", *this);
    out.grad_nonfinite = reducer_->finish(sharded_ ? nullptr : model_.grads(), out.grad);
  }
  res.redo = reducer_->redo();
  if (res.redo) {
    ++redos_;
    return res;
  }
  // Per-rank normalisation divides each rank's sums by its own count before the (exact or
  // fast) sum over ranks; global divides the global sums by the global count.
  const bool per_rank = o_.per_rank_loss;
  double sums[2];
  {
    AddSeconds in_comm(comm_s_);
    if (reducer_->mode() == ReduceMode::exact) {
      i128 v[2] = {ce_fx_, z_fx_};
      if (per_rank)
        for (int k = 0; k < 2; ++k)
          v[k] = double_to_fixed(fixed_to_double(v[k]) / double(c.local), &loss_bad_);
      const bool bad = comm_.any(loss_bad_);
      comm_.allreduce(v, 2, Type::i128, Op::sum);
      sums[0] = bad ? std::nan("") : fixed_to_double(v[0]);
      sums[1] = bad ? std::nan("") : fixed_to_double(v[1]);
    } else {
      for (int k = 0; k < 2; ++k) sums[k] = per_rank ? sums_[k] / double(c.local) : sums_[k];
      comm_.allreduce(sums, 2, Op::sum);
    }
  }
  const double denom = per_rank ? double(comm_.world()) : double(c.total);
  out.loss = sums[0] / denom;
  out.z_sum = sums[1] / denom;
  if (out.grad_nonfinite)
    std::fill(out.grad, out.grad + out.n, std::numeric_limits<float>::quiet_NaN());
  return res;
}

double DataParallel::grad_norm(const float* g, size_t n) { return reducer_->global_norm(g, n); }

bool DataParallel::any_nonfinite(const float* g, size_t n) {
  bool bad = false;
  for (size_t i = 0; i < n && !bad; ++i) bad = !std::isfinite(g[i]);
  return timed(comm_s_, [&] { return comm_.any(bad); });
}

bool DataParallel::scales_known() const {
  const auto& e = reducer_->scales().exponents();
  return std::any_of(e.begin(), e.end(), [](int64_t x) { return x != 0; });
}

void DataParallel::end_step(bool applied) {
  if (applied && !sharded_) reducer_->allgather(model_.params());
}

nlohmann::json DataParallel::state_json() const {
  return nlohmann::json{{"scale_exponents", reducer_->scales().exponents()}};
}

void DataParallel::load_state_json(const nlohmann::json& j, const std::string& where) {
  if (reducer_->mode() != ReduceMode::exact || !j.contains("scale_exponents")) return;
  const nlohmann::json& e = j.at("scale_exponents");
  if (!e.is_array() || e.size() != reducer_->scales().segments()) return;
  std::vector<int64_t> v;
  for (const nlohmann::json& x : e) {
    OLMO_CHECK(x.is_number_integer() && x.get<int64_t>() >= 0 && x.get<int64_t>() <= 254, where,
               ": reduce.scale_exponents holds ", x.dump(),
               " (an fp32 biased exponent in [0, 254] expected)");
    v.push_back(x.get<int64_t>());
  }
  reducer_->set_scale_exponents(v);
}

}  // namespace olmo::dist
