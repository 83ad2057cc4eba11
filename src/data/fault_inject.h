// Deliberate data-loader faults that silently reproduce memorization, for testing the audits
// (src/audit, monitor/audit_callback.h, monitor/validation.h). Off by default; the config refuses
// data.inject_fault unless allow_fault_injection: true. Installed as a pre_step callback
// (monitor/audit_callback.cpp):
// it rewrites the batch after the loader (whose own global order stays untouched) and before
// the model, and keeps the batch's labels (epoch, batch index, loader hash), as a buggy loader
// that believes it serves the right position would:
//   pool          every row is one of a small pool of instances (the first pool_size of the
//                 fault's first batch), served over and over; instance_indices name the pool
//                 instances (a modulo-the-pool indexing bug)
//   stride        fsl: instance k is read at token offset k * stride of its file instead of
//                 k * seq_len (stride < seq_len: windows overlap and repeat earlier text of the
//                 stream); packed_fsl: every document of the instance is read `stride` tokens
//                 before its start in its file (after it when the document starts earlier
//                 than that), same length, padding unchanged (a document-offset bug).
//                 instance_indices unchanged, so the text is plausible and only a re-read
//                 against the order catches it
//   repeat_batch  every `every` steps the previous step's batch (tokens and indices) is
//                 served again instead of the current one
// Cost: one copy of the batch's tokens per faulty step.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/instance_source.h"
#include "data/loader.h"

namespace olmo::data {

struct FaultOptions {
  std::string kind = "none";   // none | pool | stride | repeat_batch
  int64_t start_step = 1;      // first faulty step (1-based)
  int64_t pool_size = 4;
  int64_t stride = 0;          // tokens; 0 = seq_len / 2
  int64_t every = 10;
};

class FaultInjector {
 public:
  FaultInjector(const InstanceSource& ds, FaultOptions opt);  // fsl or packed_fsl
  // Rewrites b for training step `step` (no-op before start_step). Returns true if it did.
  bool apply(int64_t step, DataLoader::Batch& b);
  const FaultOptions& options() const { return opt_; }

 private:
  void stride_row(int64_t index, int32_t* out) const;
  const InstanceSource& ds_;
  FaultOptions opt_;
  std::vector<int64_t> pool_;
  DataLoader::Batch prev_;
  int64_t prev_step_ = -1;
};

}  // namespace olmo::data
