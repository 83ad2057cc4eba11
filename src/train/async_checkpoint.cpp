// Staging copy and writer thread of an asynchronous checkpoint (see async_checkpoint.h).
#include "train/async_checkpoint.h"

#include <cstring>
#include <utility>
#include <exception>

#include "ckpt/checkpoint.h"
#include "core/error.h"
#include "core/timer.h"

namespace olmo::train {

namespace {
std::function<void(int64_t)>& write_hook() {
  static std::function<void(int64_t)> hook;
  return hook;
}
}  // namespace

void set_async_write_hook(std::function<void(int64_t step)> hook) { write_hook() = std::move(hook); }

CheckpointStager::~CheckpointStager() {
  if (reserve_.joinable()) reserve_.join();
  if (thread_.joinable()) thread_.join();
}

constexpr size_t kAlignFloats = 16;  // 64 bytes

size_t CheckpointStager::floats_for(const std::vector<size_t>& piece_numels) {
  size_t n = 0;
  for (size_t k : piece_numels) n += (k + kAlignFloats - 1) / kAlignFloats * kAlignFloats;
  return n;
}

void CheckpointStager::reserve_async(size_t floats) {
  if (running() || reserve_.joinable() || floats <= cap_) return;
  reserve_ = std::thread([this, floats] {
    buf_.reset();
    buf_.reset(new float[floats]);
    std::memset(buf_.get(), 0, floats * sizeof(float));
    cap_ = floats;
  });
}

double CheckpointStager::start(ckpt::CheckpointWriter& w, const std::vector<CkptPiece>& pieces,
                               bool rank0, int64_t step) {
  OLMO_CHECK(!running(), "checkpoint: a write is still in flight (join it first)");
  const double t0 = now_seconds();
  if (reserve_.joinable()) reserve_.join();
  std::vector<size_t> numels;
  for (const CkptPiece& p : pieces) numels.push_back(p.numel());
  const size_t need = floats_for(numels);
  if (need > cap_) {
    buf_.reset();  // the old buffer goes before the new one is allocated
    buf_.reset(new float[need]);
    cap_ = need;
  }
  staged_ = pieces;
  size_t at = 0;
  for (CkptPiece& p : staged_) {
    const size_t n = p.numel();
    if (n) std::memcpy(buf_.get() + at, p.data, n * sizeof(float));
    p.data = buf_.get() + at;
    at += (n + kAlignFloats - 1) / kAlignFloats * kAlignFloats;
  }
  staged_bytes_ = at * sizeof(float);
  const double copy_s = now_seconds() - t0;
  done_.store(false, std::memory_order_relaxed);
  error_.clear();
  thread_ = std::thread([this, &w, rank0, step] {
    const double t1 = now_seconds();
    try {
      if (write_hook()) write_hook()(step);
      ckpt::write_pieces(w, staged_, rank0);
    } catch (const std::exception& e) {
      error_ = e.what();
      if (error_.empty()) error_ = "checkpoint write failed";
    }
    write_s_ = now_seconds() - t1;
    done_.store(true, std::memory_order_release);
  });
  return copy_s;
}

std::string CheckpointStager::join() {
  if (thread_.joinable()) thread_.join();
  return error_;
}

PendingCheckpoint::PendingCheckpoint() = default;
PendingCheckpoint::~PendingCheckpoint() = default;

}  // namespace olmo::train
