// Asynchronous checkpoint writing (trainer.async_checkpoint, issue 37 item 2). At the step
// boundary the trainer copies this rank's tensor pieces (weights / ZeRO shard, both AdamW moments)
// into a staging buffer (CheckpointStager::start: cost = their bytes / memory bandwidth) and a
// background thread writes them into the checkpoint's data file and makes it durable (rank 0:
// CheckpointWriter::sync_data; rank r > 0: close_shard, fsync + shard file); the training steps
// go on meanwhile. The commit (state.json, index.json, COMMITTED, atomic rename: ckpt/checkpoint.h)
// runs on the main thread, collectively, only once every rank's thread finished without error
// (Trainer::finish_checkpoint: polled at each step boundary, forced by the next save, the end of
// the run, a preemption or resize stop). At most one checkpoint is in flight; the buffer is
// reused (it doubles the resident size of the state: 12 bytes per parameter / world).
// A process killed at any point leaves at most a stepN-tmp that readers never look at: the newest
// complete checkpoint is the previous one.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "ckpt/state_io.h"

namespace olmo::train {

// One f32 tensor piece of this rank's part of a checkpoint (ckpt/state_io.h), written by
// ckpt::write_pieces (the synchronous path, and the thread's work).
using CkptPiece = ckpt::TensorPiece;

// The staging buffer and the writer thread of this rank.
class CheckpointStager {
 public:
  CheckpointStager() = default;
  ~CheckpointStager();  // joins a running write (its outcome is dropped)
  CheckpointStager(const CheckpointStager&) = delete;
  CheckpointStager& operator=(const CheckpointStager&) = delete;

  // Copies the pieces into the buffer (grown when needed, else reused) and starts the thread
  // that writes them into w (write_pieces) for the save of `step`. w must outlive join(). Not
  // while running(). Returns the seconds spent copying.
  double start(ckpt::CheckpointWriter& w, const std::vector<CkptPiece>& pieces, bool rank0,
               int64_t step);
  // Allocates the buffer for `floats` and touches every page on a background thread (the first
  // touch of a multi-GB buffer costs seconds of page faults: measured 23 s for 3.2 GB on a busy
  // 2-core VM, against 0.6 s for a copy into touched pages); start() waits for it.
  void reserve_async(size_t floats);
  // Floats the buffer needs for these pieces (each piece 64-byte aligned).
  static size_t floats_for(const std::vector<size_t>& piece_numels);
  bool running() const { return thread_.joinable(); }
  // The thread has finished (successfully or not); false when none runs.
  bool done() const { return running() && done_.load(std::memory_order_acquire); }
  // Waits for the thread; "" when the write succeeded, else its error message.
  std::string join();
  size_t staged_bytes() const { return staged_bytes_; }
  double write_seconds() const { return write_s_; }  // the thread's wall time

 private:
  std::unique_ptr<float[]> buf_;
  size_t cap_ = 0;  // floats
  size_t staged_bytes_ = 0;
  std::vector<CkptPiece> staged_;
  std::thread thread_, reserve_;
  std::atomic<bool> done_{false};
  std::string error_;
  double write_s_ = 0;
};

// Test hook (train/test_faults.h, OLMO_TEST_HOLD=write:RANK:STEP:FILE): called on the writer
// thread of the save of `step` before it writes anything, and may block it there. Process-wide;
// set before the first save; empty (the default) = nothing.
void set_async_write_hook(std::function<void(int64_t step)> hook);

// A checkpoint written (or being written) but not committed yet (Trainer::finish_checkpoint).
struct PendingCheckpoint {
  std::unique_ptr<ckpt::CheckpointWriter> writer;
  int64_t step = 0;
  bool async = false;
  ckpt::StateSnapshot snap;  // sections, pieces, state fingerprints at the step boundary
  double t0 = 0;             // when the save started
  double snapshot_s = 0;     // main thread: writer setup + copy (async) or the whole write (sync)
  double copy_s = 0;         // of which the staging copy
  size_t staged_bytes = 0;
  PendingCheckpoint();
  ~PendingCheckpoint();
};

}  // namespace olmo::train
