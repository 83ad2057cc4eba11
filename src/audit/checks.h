// Per-step data-loader checks over ledger records (shared by the in-loop audit callback and
// `olmo audit`). The expected content of every position comes from an independent
// recomputation of the numpy global order (data::global_order, PCG64(seed + epoch)) and the
// loader's documented rank slicing, never from the loader object itself, so a fault anywhere
// between the order and the model (the pre_step hooks included) shows up as a finding:
//   ledger_gap       a step missing from the ledger (or out of order)
//   position         the global batch position does not advance by one (skipped / repeated)
//   repeat_in_epoch  an instance served twice within one epoch
//   identical_batch  a batch whose content hash equals an earlier step's
//   rank_overlap     rank slices of a global batch overlap or leave a position out
//   index_mismatch   a consumed instance index differs from the one the order assigns
//   reread_mismatch  consumed tokens differ from the tokens the order assigns to that position,
//                    re-read from the token files: the window at its (file, offset) for fsl,
//                    the documents the packing assigns (then the padding) for packed_fsl
//                    (in-loop: token compare on a sample of rows; offline: the ledger's row
//                    hashes, every row)
//   never_served     at the end of a fully observed epoch, instances of the order never served
// Works on any InstanceSource (fsl and packed_fsl: the loader's order is the same numpy
// permutation of instance indices for both).
// Memory: one bit per instance, one epoch order (4 bytes per instance), 16 bytes per step.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "audit/ledger.h"
#include "data/instance_source.h"

namespace olmo::audit {

struct Finding {
  std::string kind;
  int64_t step = 0;
  std::string detail;
};

// Global-batch position of row k of `rank`'s slice (data/loader.h rank slicing).
int64_t slice_position(int64_t k, int rank, int world, int64_t chunk);
// Rows of `rank`'s slice of a global batch of B (uneven slices: ceil or floor of the chunks).
int64_t slice_rows(int64_t B, int rank, int world, int64_t chunk);

class BatchAuditor {
 public:
  BatchAuditor(const data::InstanceSource& ds, int64_t global_batch, uint64_t seed,
               bool shuffle = true);
  // tokens: the rows as consumed ([n, T]) or null (compare r.row_hashes instead).
  // reread_rows: rows re-read from the token files (0 = all, < 0 = none), chosen from the step.
  std::vector<Finding> observe(const LedgerRecord& r, const int32_t* tokens, int64_t reread_rows);
  // End of the observations: never_served for the current epoch if it was fully observed.
  std::vector<Finding> finish();
  int64_t batches_per_epoch() const { return nb_; }
  int64_t last_step() const { return last_step_; }

 private:
  const std::vector<uint32_t>& order(int64_t epoch);
  std::vector<Finding> close_epoch(int64_t step);
  const data::InstanceSource& ds_;
  std::vector<int32_t> truth_;  // one re-read row
  int64_t B_, N_, nb_;
  uint64_t seed_;
  bool shuffle_;
  int64_t order_epoch_ = -1;
  std::vector<uint32_t> order_;
  int64_t epoch_ = 0, last_step_ = 0, last_batch_ = -1;
  int world_ = 1, rank_ = 0;
  int64_t chunk_ = 1;
  std::vector<uint64_t> served_;       // bit per instance, this epoch
  std::vector<uint8_t> batch_seen_;    // per global batch position, this epoch
  std::unordered_map<uint64_t, int64_t> hashes_;  // content hash -> first step
  std::vector<std::pair<int, int64_t>> slicing_checked_;
};

}  // namespace olmo::audit
