// Checkpoint directory format, written by one or many ranks, read by any number (resharding).
//
// Layout of RUN_DIR/stepN/ (written as RUN_DIR/stepN-tmp/, then renamed atomically):
//   tensors-RRRRR.bin   raw little-endian tensor bytes of rank R, each tensor 64-byte aligned
//   state.json          the JSON sections: {"trainer": {...}, "loader": {...}, ...}
//   index.json          {"format":"olmo.cpp-checkpoint","version":1,"step":N,
//                        "files":{"state.json":{"nbytes","checksum"}},
//                        "tensors":[{"name","dtype","global_shape","offset","local_shape",
//                                    "file","byte_offset","nbytes","checksum"}]}
//   COMMITTED           marker written last: {"step":N,"index_checksum":"<hex64 of index.json>"}
// Checksums are core/hash.h hash64 (XXH3-64, seed 0) as 16 hex digits. A tensor entry is one
// piece of a global tensor: `offset` is where its local block starts in the global tensor
// (all zeros for an unsharded tensor); a name may appear several times (shards). Every file
// and both directories are fsynced before and after the rename. Directories not named exactly
// stepN (e.g. stepN-tmp) are never read. dtypes: f32 f64 i64 i32 u64 u32 u8.
// Several ranks (one job): rank 0 constructs its writer first (creating stepN-tmp), then, after a
// barrier, ranks 1..W-1 construct theirs, each writes its own tensors-RRRRR.bin, and
// close_shard() fsyncs it and writes shard-RRRRR.json (its tensor entries); after a second
// barrier rank 0's commit() merges every shard's entries (a missing or bad shard file is an
// error and nothing is committed) into index.json, then marker and rename as above. The
// checkpoint is complete only once rank 0 renamed it; a rank that dies earlier leaves a stepN-tmp
// that readers never look at.
// Errors: olmo::Error naming the checkpoint dir, the file and the tensor/key.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace olmo::ckpt {

enum class DType { f32, f64, i64, i32, u64, u32, u8 };
const char* dtype_name(DType d);
size_t dtype_size(DType d);
DType dtype_from_name(const std::string& s);  // throws olmo::Error on an unknown name

struct TensorEntry {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> global_shape, offset, local_shape;
  std::string file;
  uint64_t byte_offset = 0, nbytes = 0, checksum = 0;
};

class CheckpointWriter {
 public:
  // Rank 0: creates run_dir (if missing) and run_dir/stepN-tmp (a stale one is removed first).
  // Rank r > 0 (of world W): opens its data file inside the existing stepN-tmp.
  CheckpointWriter(const std::string& run_dir, int64_t step, int rank = 0, int world = 1);
  // Not committed => the tmp dir is removed; earlier checkpoints are never touched.
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Writes the tensor bytes now (no copy kept). local_shape defaults to global_shape, offset to
  // zeros; the block must lie inside the global shape. Throws on I/O failure (names the file)
  // and on a NaN/Inf in an f32/f64 tensor (names the tensor and element; nothing is written).
  void add_tensor(const std::string& name, const float* data, std::vector<int64_t> global_shape,
                  std::vector<int64_t> offset = {}, std::vector<int64_t> local_shape = {});
  void add_tensor(const std::string& name, const int64_t* data, std::vector<int64_t> global_shape,
                  std::vector<int64_t> offset = {}, std::vector<int64_t> local_shape = {});
  void add_tensor(const std::string& name, const uint8_t* data, std::vector<int64_t> global_shape,
                  std::vector<int64_t> offset = {}, std::vector<int64_t> local_shape = {});
  void add_raw(const std::string& name, DType dtype, const void* data,
               std::vector<int64_t> global_shape, std::vector<int64_t> offset = {},
               std::vector<int64_t> local_shape = {});

  // A JSON section (key unique). Stored in state.json.
  void add_json(const std::string& key, const nlohmann::json& value);

  // Rank r > 0: makes its data durable and writes shard-RRRRR.json (fsynced). JSON sections of
  // ranks > 0 are not allowed (rank 0 writes the small state).
  void close_shard();

  // Rank 0: makes its data file durable (fsync, close) now, so that commit() does no bulk I/O
  // (the asynchronous save calls it on its writer thread). Optional: commit() does it otherwise.
  void sync_data();

  // Rank 0, after every other rank's close_shard(): writes state.json, index.json (all ranks'
  // tensors), COMMITTED, fsyncs, renames stepN-tmp -> stepN (an existing stepN is replaced only
  // after the new one is complete), fsyncs run_dir. Returns run_dir/stepN.
  std::string commit();

  const std::string& tmp_dir() const { return tmp_dir_; }
  // Layout-independent fingerprint partial sums (ckpt/fingerprint.h) of the pieces this writer
  // wrote, per tensor name (32-bit dtypes), computed while writing: summed over every rank's
  // writer (mod 2^64) they give each global tensor's fingerprint.
  const std::map<std::string, uint64_t>& fingerprints() const { return fingerprints_; }
  // Seconds spent on them: on this thread, on the helper thread beside the writes (large
  // pieces), and waiting for that helper. The fingerprint's share of the save's wall time is
  // inline + wait; its CPU time inline + helper.
  struct FingerprintTime {
    double inline_s = 0, helper_s = 0, wait_s = 0;
  };
  const FingerprintTime& fingerprint_time() const { return fp_time_; }

 private:
  void write_bytes(const void* p, size_t n);
  std::string run_dir_, tmp_dir_, final_dir_, data_file_;
  int64_t step_;
  int rank_ = 0, world_ = 1;
  std::string file_name_;
  int fd_ = -1;
  uint64_t pos_ = 0;
  bool committed_ = false;
  bool data_synced_ = false;  // rank 0's data file fsynced and closed (sync_data)
  std::vector<TensorEntry> tensors_;
  std::map<std::string, uint64_t> fingerprints_;
  FingerprintTime fp_time_;
  nlohmann::json sections_ = nlohmann::json::object();
};

class CheckpointReader {
 public:
  // Reads and checks COMMITTED, index.json (checksum, format) and state.json (checksum), and that
  // every data file is large enough for its tensors. Tensor checksums are checked on read (or all
  // at once by verify()).
  explicit CheckpointReader(const std::string& dir);

  // Hashes every tensor; throws naming file and tensor on the first mismatch.
  void verify() const;

  int64_t step() const { return step_; }
  const std::string& dir() const { return dir_; }
  bool has_tensor(const std::string& name) const;
  bool has_json(const std::string& key) const;
  const std::vector<TensorEntry>& tensors() const { return tensors_; }
  // Global shape of a tensor (throws if absent).
  std::vector<int64_t> shape(const std::string& name) const;

  // Whole global tensor into out; expected_shape must equal the stored global shape and the
  // dtype must match (errors name both). Pieces are assembled and checksum-verified.
  void read_tensor(const std::string& name, float* out, const std::vector<int64_t>& expected_shape) const;
  void read_tensor(const std::string& name, int64_t* out, const std::vector<int64_t>& expected_shape) const;
  void read_tensor(const std::string& name, uint8_t* out, const std::vector<int64_t>& expected_shape) const;
  // Resharding read: the block [offset, offset+local_shape) of the global tensor, row-major,
  // assembled from whatever pieces cover it (throws if not fully covered).
  void read_slice(const std::string& name, DType dtype, void* out, const std::vector<int64_t>& offset,
                  const std::vector<int64_t>& local_shape) const;

  // A JSON section; throws olmo::Error naming the key and dir when absent.
  const nlohmann::json& json(const std::string& key) const;
  // The file that holds the JSON sections (for messages).
  std::string sections_file() const { return dir_ + "/state.json"; }

 private:
  std::string dir_;
  int64_t step_ = 0;
  std::vector<TensorEntry> tensors_;
  nlohmann::json sections_;
};

// Newest RUN_DIR/stepN that loads and verifies completely; a corrupt or incomplete newer one is
// reported (to *warnings if given, else to stderr as "warning: ...") and skipped. nullopt if none.
std::optional<std::string> latest_complete(const std::string& run_dir,
                                           std::vector<std::string>* warnings = nullptr);

// Whether dir is a committed checkpoint (its COMMITTED marker is present; nothing verified).
bool is_committed(const std::string& dir);
// Whether dir holds pieces of a checkpoint, committed or not (its index, state or a data file),
// or is named stepN: what a command that takes "a checkpoint or another kind of dir" asks before
// it calls an uncommitted one incomplete.
bool looks_like_checkpoint(const std::string& dir);
// The file of a checkpoint dir that holds its JSON sections (for error messages that name it).
std::string state_file(const std::string& dir);

// Steps of the committed (COMMITTED marker present) stepN dirs in run_dir, ascending.
std::vector<int64_t> list_checkpoints(const std::string& run_dir);

// Keeps the n newest committed stepN dirs, deletes older stepN dirs (committed or not) and
// leftover stepN-tmp dirs older than the newest kept. n >= 1. keep_step >= 0 (the checkpoint just
// committed: complete, durable) is never deleted and counts as one of the n, whatever newer
// committed dirs exist (a corrupt stepM, M > keep_step, skipped at resume, must not push the one
// complete checkpoint out).
void keep_last(const std::string& run_dir, int n, int64_t keep_step = -1);

// Bytes available to an unprivileged writer on the file system of dir (statvfs f_bavail x
// f_frsize; the free-space hook's figure when one is set). Throws naming dir when statvfs fails.
uint64_t free_bytes(const std::string& dir);
// Before a checkpoint of `need` bytes is written into run_dir: throws olmo::Error naming run_dir,
// the bytes needed (with a margin of need / 20 + 1 MiB for the file system's own blocks and the
// JSON files) and the bytes free, when they do not fit. `what` prefixes the message.
void check_free_space(const std::string& run_dir, uint64_t need, const std::string& what);

// Test hook: when set, free_bytes() returns its value for the dir instead of statvfs's
// (train/test_faults.h: OLMO_TEST_FREE_BYTES). nullptr (default) disables it.
void set_free_space_hook(std::function<uint64_t(const std::string& dir)> hook);

// Test hook: called before every data write with (file, bytes about to be written); returning
// false makes that write fail like ENOSPC. nullptr (default) disables it.
void set_write_fault_hook(std::function<bool(const std::string& file, size_t nbytes)> hook);

}  // namespace olmo::ckpt
