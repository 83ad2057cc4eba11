// Data-loader checks (see checks.h).
#include "audit/checks.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "data/pcg64.h"

namespace olmo::audit {

int64_t slice_position(int64_t k, int rank, int world, int64_t chunk) {
  return ((k / chunk) * world + rank) * chunk + k % chunk;
}

int64_t slice_rows(int64_t B, int rank, int world, int64_t chunk) {
  int64_t k = 0;  // a rank's positions increase with k: count those inside the batch
  while (slice_position(k, rank, world, chunk) < B) ++k;
  return k;
}

BatchAuditor::BatchAuditor(const data::InstanceSource& ds, int64_t B, uint64_t seed, bool shuffle)
    : ds_(ds), B_(B), N_(ds.size()), nb_(B > 0 ? ds.size() / B : 0), seed_(seed),
      shuffle_(shuffle) {
  OLMO_CHECK(B_ > 0 && nb_ > 0, "audit: global batch of ", B_, " instances over ", N_,
             " instances");
  served_.assign(size_t(N_ + 63) / 64, 0);
  truth_.resize(size_t(ds.seq_len()));
  batch_seen_.assign(size_t(nb_), 0);
}

const std::vector<uint32_t>& BatchAuditor::order(int64_t e) {
  if (e != order_epoch_) {
    order_ = data::global_order(N_, seed_, e, shuffle_);
    order_epoch_ = e;
  }
  return order_;
}

static std::string list(const std::vector<int64_t>& v, size_t max = 5) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < max; ++i) s += cat(i ? ", " : "", v[i]);
  if (v.size() > max) s += cat(", ... (", v.size(), " in all)");
  return s;
}

std::vector<Finding> BatchAuditor::close_epoch(int64_t step) {
  std::vector<Finding> out;
  if (epoch_ == 0) return out;
  bool complete = std::all_of(batch_seen_.begin(), batch_seen_.end(), [](uint8_t x) { return x; });
  if (complete) {
    const auto& ord = order(epoch_);
    std::vector<int64_t> missing;
    for (int64_t b = 0; b < nb_; ++b)
      for (int64_t k = 0; k < slice_rows(B_, rank_, world_, chunk_); ++k) {
        int64_t idx = ord[size_t(b * B_ + slice_position(k, rank_, world_, chunk_))];
        if (!(served_[size_t(idx) / 64] >> (idx % 64) & 1)) missing.push_back(idx);
      }
    if (!missing.empty())
      out.push_back({"never_served", step,
                     cat(missing.size(), " instances of epoch ", epoch_,
                         " were never served by the end of the epoch: ", list(missing))});
  }
  std::fill(served_.begin(), served_.end(), 0);
  std::fill(batch_seen_.begin(), batch_seen_.end(), 0);
  return out;
}

std::vector<Finding> BatchAuditor::observe(const LedgerRecord& r, const int32_t* tokens,
                                           int64_t reread_rows) {
  std::vector<Finding> out;
  const int64_t T = ds_.seq_len(), n = int64_t(r.indices.size());
  if (last_step_ > 0 && r.step != last_step_ + 1)
    out.push_back({"ledger_gap", r.step,
                   cat("ledger jumps from step ", last_step_, " to step ", r.step)});
  // Epoch bookkeeping and the position of this global batch.
  OLMO_CHECK(r.epoch >= 1 && r.batch >= 0 && r.batch < nb_, "audit: step ", r.step,
             ": batch position (epoch ", r.epoch, ", batch ", r.batch, ") outside the ", nb_,
             " batches of an epoch (is this ledger from another data config?)");
  if (r.epoch != epoch_) {
    for (auto& f : close_epoch(r.step)) out.push_back(f);
    if (epoch_ != 0 && !(r.epoch == epoch_ + 1 && r.batch == 0))
      out.push_back({"position", r.step, cat("epoch ", epoch_, " batch ", last_batch_,
                                             " is followed by epoch ", r.epoch, " batch ",
                                             r.batch)});
    epoch_ = r.epoch;
  } else if (last_batch_ >= 0 && r.batch != last_batch_ + 1) {
    out.push_back({"position", r.step, cat("global batch ", last_batch_, " of epoch ", epoch_,
                                           " is followed by batch ", r.batch)});
  }
  world_ = r.world;
  rank_ = r.rank;
  chunk_ = std::max<int64_t>(1, r.chunk);
  last_step_ = r.step;
  last_batch_ = r.batch;
  if (batch_seen_[size_t(r.batch)] == 1)
    out.push_back({"position", r.step, cat("global batch ", r.batch, " of epoch ", r.epoch,
                                           " served a second time")});
  batch_seen_[size_t(r.batch)] = 1;

  // Rank slicing: positions of all ranks are disjoint and cover the batch (once per layout).
  std::pair<int, int64_t> layout{world_, chunk_};
  if (std::find(slicing_checked_.begin(), slicing_checked_.end(), layout) ==
      slicing_checked_.end()) {
    slicing_checked_.push_back(layout);
    std::vector<int> owner(size_t(B_), -1);
    std::vector<int64_t> bad;
    for (int rk = 0; rk < world_; ++rk)
      for (int64_t k = 0; k < slice_rows(B_, rk, world_, chunk_); ++k) {
        int64_t p = slice_position(k, rk, world_, chunk_);
        if (p < 0 || p >= B_ || owner[size_t(p)] != -1) bad.push_back(p);
        else owner[size_t(p)] = rk;
      }
    for (int64_t p = 0; p < B_; ++p)
      if (owner[size_t(p)] == -1) bad.push_back(p);
    if (!bad.empty())
      out.push_back({"rank_overlap", r.step,
                     cat("rank slices (world ", world_, ", chunk ", chunk_,
                         ") overlap or miss positions: ", list(bad))});
  }

  // Identical batch.
  auto [it, fresh] = hashes_.emplace(r.content_hash, r.step);
  if (!fresh)
    out.push_back({"identical_batch", r.step,
                   cat("the batch of step ", r.step, " is identical to the batch of step ",
                       it->second, " (content hash ", r.content_hash, ")")});

  // Repeats within the epoch, index and content against the order.
  const auto& ord = order(r.epoch);
  std::vector<int64_t> repeats, wrong_idx, wrong_tok;
  std::string first_wrong;
  int64_t want = reread_rows < 0 ? 0 : reread_rows == 0 ? n : std::min(n, reread_rows);
  int64_t start = n > 0 ? (r.step * 7919) % n : 0;
  for (int64_t k = 0; k < n; ++k) {
    int64_t idx = r.indices[size_t(k)];
    if (idx >= N_) {
      wrong_idx.push_back(idx);
      continue;
    }
    uint64_t& w = served_[size_t(idx) / 64];
    if (w >> (idx % 64) & 1) repeats.push_back(idx);
    w |= uint64_t(1) << (idx % 64);
    int64_t pos = r.batch * B_ + slice_position(k, r.rank, r.world, chunk_);
    int64_t expect = pos < N_ ? int64_t(ord[size_t(pos)]) : -1;
    if (idx != expect) wrong_idx.push_back(idx);
    bool sampled = ((k - start + n) % n) < want;
    if (!sampled || expect < 0) continue;
    ds_.read(expect, truth_.data());
    bool same = tokens ? std::memcmp(tokens + k * T, truth_.data(), size_t(T) * 4) == 0
                       : row_hash(truth_.data(), T) == r.row_hashes[size_t(k)];
    if (!same) {
      wrong_tok.push_back(k);
      if (first_wrong.empty())
        first_wrong = cat("row ", k, " should hold instance ", expect, " = ", ds_.describe(expect));
    }
  }
  if (!repeats.empty())
    out.push_back({"repeat_in_epoch", r.step,
                   cat(repeats.size(), " instances served a second time in epoch ", r.epoch,
                       ": ", list(repeats))});
  if (!wrong_idx.empty())
    out.push_back({"index_mismatch", r.step,
                   cat(wrong_idx.size(), " of ", n, " instance indices differ from the numpy "
                       "global order at epoch ", r.epoch, " batch ", r.batch, ": ",
                       list(wrong_idx))});
  if (!wrong_tok.empty())
    out.push_back({"reread_mismatch", r.step,
                   cat(wrong_tok.size(), " of ", want, " re-read rows differ from the token "
                       "files at the positions the numpy global order assigns; ",
                       first_wrong)});
  return out;
}

std::vector<Finding> BatchAuditor::finish() { return close_epoch(last_step_); }

}  // namespace olmo::audit
