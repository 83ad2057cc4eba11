// Deterministic, resumable data loader over an InstanceSource (FslDataset, PackedFslDataset),
// equal to OLMo-core's
// NumpyFSLDataLoader (data_loader.py) with chunk_size 1:
//   * epoch e (1-based) orders instances by global_order(N, seed, e) (numpy PCG64(seed + e)
//     shuffle of arange(N, uint32)), keeps the first B * floor(N / B) (B = global batch in
//     instances) and reshapes to [num_batches, B];
//   * global batch b is row b; rank r of W takes columns r, r+W, r+2W, ... of that row, so the
//     sequence of global batches never depends on the world size; with set_rank_chunk(c) it
//     takes chunks of c consecutive columns instead (chunk j = columns [j*c, (j+1)*c) for
//     j = r, r+W, ...; the last chunk may be short): with c = the micro-batch size in
//     instances, every micro-batch holds the same instances whatever W is (the trainer's
//     dist.reduce=fast mode, which needs W | B / c); c = 1 is OLMo-core's slicing (the exact
//     mode's: any W up to B, ranks get ceil(B/W) or floor(B/W) instances). Every rank must get
//     at least one instance (ceil(B / c) >= W);
//   * next() returns batches in order, moving to epoch e+1 after the last batch of epoch e (as
//     OLMo-core's Trainer does with reshuffle(epoch)); set_max_epochs(k) makes it return false
//     once epoch k is exhausted;
//   * state() is OLMo-core's data-loader state_dict (same keys and values, fingerprint included)
//     and load_state() follows its load_state_dict: seed from the state wins, batches_processed
//     = tokens_processed / global_batch_tokens (so a changed batch size resumes at the token
//     count), a fingerprint mismatch throws unless ignore_fingerprint_mismatch.
// Every batch carries global_hash = hash64 over the raw token bytes of all B instances of the
// global batch in global order (identical on every rank), for logging and audits.
// Cost per batch: one copy of this rank's B/W * T tokens out of the memory map plus one XXH3
// pass over the global batch's B * T * 4 bytes; the epoch order costs O(N) once per epoch.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/state_visitor.h"

#include "data/fsl_dataset.h"

namespace olmo::data {

// The data loader's checkpoint section "loader": OLMo-core's data-loader state dict as a JSON
// value (an importer holds it without a dataset); fingerprint group "loader": seed, epoch,
// tokens_processed.
inline void visit_loader_state(StateVisitor& v, nlohmann::json& state) {
  StateVisitor::Section s(v, "loader");
  v.whole(state, {"loader", {"seed", "epoch", "tokens_processed"}});
}

// Instances rank `rank` of `world` takes from a global batch of B in chunks of c (see above).
int64_t rank_slice_len(int64_t B, int rank, int world, int64_t c);

class DataLoader {
 public:
  struct Batch {
    int64_t B = 0, T = 0;                  // this rank's instances, sequence length
    std::vector<int32_t> tokens;           // [B, T] this rank's instances
    std::vector<int64_t> instance_indices; // [B] dataset indices of those instances
    uint64_t global_hash = 0;              // content hash of the whole global batch
    int64_t epoch = 0;                     // 1-based
    int64_t batch_index = 0;               // index of the global batch within its epoch
  };

  DataLoader(const InstanceSource& ds, int64_t global_batch_instances, uint64_t seed, int rank = 0,
             int world = 1, bool shuffle = true);

  bool next(Batch& out);

  nlohmann::json state() const;
  void load_state(const nlohmann::json& st, bool ignore_fingerprint_mismatch = false);
  // Checkpoint section "loader" (visit_loader_state).
  void visit_state(StateVisitor& v, bool ignore_fingerprint_mismatch = false) {
    nlohmann::json st = v.loading() ? nlohmann::json() : state();
    visit_loader_state(v, st);
    if (v.loading()) load_state(st, ignore_fingerprint_mismatch);
  }

  int64_t batches_per_epoch() const { return ds_.size() / gb_; }
  int64_t global_batch_instances() const { return gb_; }
  int64_t global_batch_tokens() const { return gb_ * ds_.seq_len(); }
  int64_t rank_batch_instances() const { return rank_slice_len(gb_, rank_, world_, chunk_); }
  int64_t epoch() const { return epoch_; }
  int64_t batches_processed() const { return batches_processed_; }
  int64_t tokens_processed() const { return tokens_processed_; }
  uint64_t seed() const { return seed_; }
  void set_max_epochs(int64_t max_epochs) { max_epochs_ = max_epochs; }  // 0 = unlimited
  // Rank slices in chunks of c consecutive instances (see above); ceil(B / c) >= W required.
  void set_rank_chunk(int64_t c);
  int64_t rank_chunk() const { return chunk_; }
  // OLMo-core's global_batch_size setter: change by an integer factor between batches;
  // batches_processed is rescaled (growing requires batches_processed % factor == 0).
  void set_global_batch_instances(int64_t b);

  // Full order of epoch e (length N, before the tail cut): OLMo-core's global-indices file.
  const std::vector<uint32_t>& epoch_order(int64_t e);
  // Instances of global batch b of epoch e, in global order; and its content hash.
  std::vector<int64_t> global_batch(int64_t e, int64_t b);
  uint64_t global_batch_hash(int64_t e, int64_t b);

 private:
  void check_batch_shape(int64_t b) const;
  const InstanceSource& ds_;  // FslDataset or PackedFslDataset
  int64_t gb_;
  uint64_t seed_;
  int rank_, world_;
  bool shuffle_;
  int64_t chunk_ = 1;
  int64_t epoch_ = 1, batches_processed_ = 0, tokens_processed_ = 0, max_epochs_ = 0;
  int64_t order_epoch_ = -1;
  uint64_t order_seed_ = 0;
  std::vector<uint32_t> order_;
};

}  // namespace olmo::data
