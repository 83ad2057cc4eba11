// GradStream: the reduce-scatter posted unit by unit during the backward (see grad_stream.h).
#include "distributed/grad_stream.h"

#include <algorithm>

#include "core/error.h"
#include "core/timer.h"

namespace olmo::dist {

GradStream::GradStream(Communicator& comm, const ShardLayout& layout, Type t, size_t chunk_elems,
                       size_t pool_chunks)
    : comm_(comm), layout_(layout), type_(t), chunk_(std::max<size_t>(1, chunk_elems)),
      pool_chunks_(std::max<size_t>(1, pool_chunks)) {}

GradStream::~GradStream() {
  // An exception mid-stream (the step failed): finish the exchange so no MPI request
  // outlives its buffers.
  if (active_) {
    try {
      for (auto& r : recvs_) comm_.wait(r.req);
      for (auto& s : sends_) comm_.wait(s);
    } catch (...) {
    }
  }
}

void GradStream::begin(Sink sink) {
  OLMO_CHECK(!active_, "GradStream: begin() while a stream is in flight");
  sink_ = std::move(sink);
  active_ = true;
}

std::vector<char> GradStream::take() {
  const size_t bytes = chunk_ * type_size(type_);
  while (in_use_ >= pool_chunks_) complete_front();
  ++in_use_;
  if (!pool_.empty()) {
    std::vector<char> b = std::move(pool_.back());
    pool_.pop_back();
    return b;
  }
  pool_bytes_ += bytes;
  return std::vector<char>(bytes);
}

void GradStream::complete_front() {
  Recv& r = recvs_.front();
  timed(comm_s_, [&] { comm_.wait(r.req); });
  sink_(r.lo, r.hi, r.buf.data());
  pool_.push_back(std::move(r.buf));
  --in_use_;
  recvs_.pop_front();
}

void GradStream::post(const void* src, size_t a, size_t b) {
  OLMO_CHECK(active_, "GradStream: post() outside begin() .. drain()");
  OLMO_CHECK(a <= b && b <= layout_.numel, "GradStream: range [", a, ", ", b, ") outside [0, ",
             layout_.numel, ")");
  const size_t W = layout_.world, me = size_t(comm_.rank()), es = type_size(type_);
  const char* base = static_cast<const char*>(src);
  // Sends first (nothing below waits before they are posted): every other owner's part of
  // [a, b), in chunks, straight from the caller's buffer.
  for (size_t r = 0; r < W; ++r) {
    if (r == me) continue;
    const size_t lo = std::max(a, layout_.begin(r)), hi = std::min(b, layout_.end(r));
    for (size_t x = lo; x < hi; x += chunk_) {
      const size_t n = std::min(chunk_, hi - x);
      timed(comm_s_, [&] { sends_.push_back(comm_.isend(base + x * es, n, type_, int(r))); });
    }
  }
  // This rank's part: per chunk one receive from every other rank, in rank order.
  const size_t lo = std::max(a, layout_.begin(me)), hi = std::min(b, layout_.end(me));
  for (size_t x = lo; x < hi; x += chunk_) {
    const size_t n = std::min(chunk_, hi - x);
    for (size_t q = 0; q < W; ++q) {
      if (q == me) continue;
      Recv rv;
      rv.lo = x;
      rv.hi = x + n;
      rv.buf = take();
      timed(comm_s_, [&] { rv.req = comm_.irecv(rv.buf.data(), n, type_, int(q)); });
      recvs_.push_back(std::move(rv));
    }
  }
  progress();
}

void GradStream::progress() {
  while (!recvs_.empty()) {
    bool done = false;
    timed(comm_s_, [&] { done = comm_.test(recvs_.front().req); });
    if (!done) break;
    complete_front();
  }
  // Completed sends are dropped (a test also drives the progress engine).
  while (!sends_.empty()) {
    bool done = false;
    timed(comm_s_, [&] { done = comm_.test(sends_.front()); });
    if (!done) break;
    sends_.pop_front();
  }
}

void GradStream::drain() {
  if (!active_) return;
  while (!recvs_.empty()) complete_front();
  timed(comm_s_, [&] {
    for (auto& s : sends_) comm_.wait(s);
  });
  sends_.clear();
  active_ = false;
  sink_ = nullptr;
}

}  // namespace olmo::dist
