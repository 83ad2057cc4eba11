// The offline data-loader audit of a run dir (`olmo audit RUN_DIR`, cli/audit.cpp): reads
// RUN_DIR/audit/ledger.bin (written by the in-loop audit, monitor/audit_callback.h) and
// RUN_DIR/metrics.jsonl, and checks against the dataset as the run saw it (fsl or packed_fsl,
// rebuilt by the caller from the run's config):
//   * every ledger record (audit/checks.h) against an independent recomputation of the numpy
//     global order, with a re-read of EVERY row (the ledger's row hashes against the token
//     files: the window for fsl, the documents the packing assigns for packed_fsl);
//   * that the ledger covers every trained step of metrics.jsonl (ledger_missing);
//   * the served unigram distribution of the whole run (real tokens only: packed padding is not
//     counted) against the corpus's (prepare's index, files without one counted now);
//   * contamination of the held-out sets and duplicates across mix entries (audit/corpus_index.h)
//     when the training files carry a 13-gram index.
// Errors (thrown, naming the file): no ledger, an empty or corrupt ledger, a ledger position
// outside the dataset's epoch. Findings are returned, never thrown.
// Cost: one re-read of every served instance (memory-mapped files), one read of the index.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "audit/checks.h"
#include "core/progress_bar.h"
#include "data/instance_source.h"

namespace olmo::audit {

struct AuditInputs {
  std::string run_dir;
  const data::InstanceSource* dataset = nullptr;  // the run's training instances
  int64_t global_batch = 0;                       // instances per global batch
  uint64_t seed = 0;                              // data.seed
  uint32_t eos_id = 0;
  double entropy_tol_bits = 0, top_share_tol = 0, ngram_threshold = 0;  // audit.* of the config
  std::map<std::string, std::vector<std::string>> held_out;  // label -> token files
  bool distribution = true;  // the served-distribution check
  // A bar on stderr over the ledger records of each pass (core/progress_bar.h): automatic draws
  // it only when stderr is a terminal; stdout is never written.
  ProgressMode progress = ProgressMode::automatic;
};

struct AuditReport {
  std::vector<Finding> findings;
  std::vector<std::string> notes;
  int64_t records = 0, first_step = 0, last_step = 0;
  bool clean() const { return findings.empty(); }
};

AuditReport audit_run(const AuditInputs& in);

}  // namespace olmo::audit
