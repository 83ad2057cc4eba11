// The batch ledger: one compact binary record per training step in RUN_DIR/audit/ledger.bin,
// written by rank 0 (monitor/audit_callback.h) and read by `olmo audit`. Per record (LE):
//   u32 magic 'LREC', u32 n (rows this rank consumed), i64 step, i64 epoch (1-based),
//   i64 batch (index of the global batch within its epoch), u16 world, u16 rank, u32 chunk
//   (rank slicing, see data/loader.h), u64 content hash (XXH3 of the consumed tokens),
//   u64 loader hash (the loader's global-batch hash), n x u32 instance index,
//   n x u32 row hash (low 32 bits of row_hash of each consumed row)
// = 56 + 8 n bytes per step. Resumable: open() drops records with step > the resumed step and
// a torn last record (a crash mid-write), so a restarted run continues without duplicates.
// A second record kind, a recipe change allowed at a resume (train/recipe_check.h), written by
// the trainer (rank 0) once the resumed state is verified: u32 magic 'LRCP', u32 n, i64 step
// (the checkpoint's: the change applies from step + 1), n bytes of JSON text
// {"changes": [{"key", "from", "to", "class"}], "from": checkpoint dir}; kept or dropped with
// the batch records of its step.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace olmo::audit {

struct LedgerRecord {
  int64_t step = 0, epoch = 0, batch = 0;
  int world = 1, rank = 0;
  int64_t chunk = 1;
  uint64_t content_hash = 0, loader_hash = 0;
  std::vector<uint32_t> indices;
  std::vector<uint32_t> row_hashes;
};

struct RecipeChangeRecord {
  int64_t step = 0;
  std::string json;
};

// RUN_DIR/audit/ledger.bin: the ledger of a run dir.
std::string ledger_path(const std::string& run_dir);

// Hash of one instance's T tokens (int32 and uint32 views of the same ids hash equally).
uint32_t row_hash(const void* tokens, int64_t T);

class LedgerWriter {
 public:
  // Opens (creates) path for append after dropping records with step > keep_through_step.
  LedgerWriter(const std::string& path, int64_t keep_through_step);
  ~LedgerWriter();
  LedgerWriter(const LedgerWriter&) = delete;
  LedgerWriter& operator=(const LedgerWriter&) = delete;
  void append(const LedgerRecord& r);  // written and flushed
  void append(const RecipeChangeRecord& r);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  FILE* f_ = nullptr;
};

struct Ledger {
  std::vector<LedgerRecord> records;
  std::vector<RecipeChangeRecord> recipe_changes;
  bool torn_tail = false;  // the file ended inside a record (ignored)
};
// Reads a ledger file; throws naming the file on a bad magic (not a ledger / corrupt).
Ledger read_ledger(const std::string& path);

}  // namespace olmo::audit
