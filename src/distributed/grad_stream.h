// The gradient stream: a reduce-scatter that runs while the backward is still producing the
// gradient. The data-parallel reducer (zero.h) posts each parameter unit's range [a, b) as soon
// as the backward of the step's last micro-batch has finished it (reverse layer order: the head,
// the blocks from the last, as PyTorch DDP's buckets); the stream sends every other rank its
// part of [a, b) (ShardLayout) straight from the caller's buffer and receives the other ranks'
// contributions to this rank's part into a small pool of chunk buffers. Completed receives are
// handed to the sink in posting order -- chunk by chunk, the ranks in rank order -- so the sink
// sees the same sequence on every run (an fp32 sum gets deterministic bits; integer sums are
// order-free anyway).
// Progress with one thread per rank: MPI moves large messages only inside MPI calls, so the
// reducer calls progress() at every unit boundary of the backward (a test of the oldest
// receive); the optimizer waits only for the rest, in drain().
// Contracts: every rank posts the same ranges in the same order (the model's unit order); the
// sent ranges of the source buffer stay untouched until drain(); messages use the
// communicator's point-to-point tag, so they never match a collective's.
// Deadlock freedom: a rank that needs a pool buffer waits for its oldest receive, which belongs
// to a unit it has already posted; the sender of that chunk posts it when it reaches that unit,
// and nothing a sender waits for lies beyond the units it has posted.
// Memory: pool_chunks x chunk_elems elements of staging (independent of the model's size).
#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "distributed/communicator.h"
#include "distributed/zero.h"

namespace olmo::dist {

class GradStream {
 public:
  // sink(lo, hi, data): one other rank's contribution to this rank's flat elements [lo, hi).
  using Sink = std::function<void(size_t lo, size_t hi, const void* data)>;

  GradStream(Communicator& comm, const ShardLayout& layout, Type t, size_t chunk_elems,
             size_t pool_chunks);
  GradStream(const GradStream&) = delete;
  GradStream& operator=(const GradStream&) = delete;
  ~GradStream();

  // Starts a stream (no exchange in flight); sink receives the arrivals.
  void begin(Sink sink);
  bool active() const { return active_; }
  // src points at flat element 0 of the caller's buffer (only [a, b) is read).
  void post(const void* src, size_t a, size_t b);
  // Hands every receive that has arrived (in posting order) to the sink; drives MPI.
  void progress();
  // Waits for everything posted; ends the stream.
  void drain();

  size_t buffer_bytes() const { return pool_bytes_; }
  double comm_seconds() const { return comm_s_; }

 private:
  struct Recv {
    size_t lo = 0, hi = 0;
    std::vector<char> buf;
    Communicator::Request req;
  };
  std::vector<char> take();
  void complete_front();

  Communicator& comm_;
  ShardLayout layout_;
  Type type_;
  size_t chunk_ = 0, pool_chunks_ = 0, pool_bytes_ = 0;
  std::vector<std::vector<char>> pool_;
  size_t in_use_ = 0;
  std::deque<Recv> recvs_;
  std::deque<Communicator::Request> sends_;
  Sink sink_;
  bool active_ = false;
  double comm_s_ = 0;
};

}  // namespace olmo::dist
