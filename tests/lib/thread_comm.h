// W ranks as threads in one process, for tests of collective code without mpirun
// (tests/train/any_partition_test.cpp, tests/distributed/grad_stream_test.cpp): a Hub joins the
// W threads, each rank talks through its own ThreadComm. Every collective is a rendezvous of the
// W threads; point-to-point sends are buffered, receives complete in wait()/test(). One rank
// computes at a time (Hub::turn: a rank holds it except while it waits in a rendezvous), since
// the library's kernels are not meant to run two models side by side in one process; a rank's
// thread takes `turn` before it starts.
#pragma once
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <vector>

#include "core/error.h"
#include "distributed/communicator.h"

namespace olmo::test_comm {

using dist::Op;
using dist::Type;

// W ranks as threads, one computing at a time. Collectives complete when called (a rendezvous of
// every rank: the contract that every rank calls them in the same order makes that a valid
// schedule); point-to-point sends are buffered, receives complete in wait().
struct Hub {
  explicit Hub(int w) : world(w), slots(size_t(w)) {}
  int world;
  std::mutex m;
  std::condition_variable cv;
  int arrived = 0;
  uint64_t gen = 0;
  std::vector<const void*> slots;
  std::map<std::pair<int, int>, std::deque<std::vector<char>>> mail;  // (from, to) -> messages
  // One rank computes at a time (the library's kernels are not meant to run two models side by
  // side in one process): a rank holds `turn` except while it waits in a rendezvous.
  std::mutex turn;
  void barrier() {
    turn.unlock();
    struct Relock {
      std::mutex& t;
      ~Relock() { t.lock(); }
    } relock{turn};
    std::unique_lock<std::mutex> lk(m);
    const uint64_t g = gen;
    if (++arrived == world) {
      arrived = 0;
      ++gen;
      cv.notify_all();
    } else {
      cv.wait(lk, [&] { return gen != g; });
    }
  }
};

template <class T>
void reduce_into(T* out, const std::vector<const void*>& in, size_t off, size_t n, Op op) {
  for (size_t i = 0; i < n; ++i) {
    T v = static_cast<const T*>(in[0])[off + i];
    for (size_t r = 1; r < in.size(); ++r) {
      const T x = static_cast<const T*>(in[r])[off + i];
      v = op == Op::sum ? T(v + x) : (x > v ? x : v);
    }
    out[i] = v;
  }
}

void reduce_typed(Type t, void* out, const std::vector<const void*>& in, size_t off, size_t n,
                  Op op) {
  switch (t) {
    case Type::f32: return reduce_into(static_cast<float*>(out), in, off, n, op);
    case Type::f64: return reduce_into(static_cast<double*>(out), in, off, n, op);
    case Type::i64: return reduce_into(static_cast<int64_t*>(out), in, off, n, op);
    case Type::i128: return reduce_into(static_cast<__int128*>(out), in, off, n, op);
  }
}

class ThreadComm : public dist::Communicator {
 public:
  ThreadComm(Hub& h, int rank) : h_(h), rank_(rank) {}
  int rank() const override { return rank_; }
  int world() const override { return h_.world; }
  std::string backend() const override { return "threads"; }
  void allreduce(void* buf, size_t n, Type t, Op op) override {
    std::vector<char> tmp(n * dist::type_size(t));
    publish(buf);
    reduce_typed(t, tmp.data(), h_.slots, 0, n, op);
    h_.barrier();  // every rank has read every buffer
    std::memcpy(buf, tmp.data(), tmp.size());
  }
  Request ireduce_scatter(const void* send, void* recv, size_t n, Type t, Op op) override {
    publish(send);
    reduce_typed(t, recv, h_.slots, size_t(rank_) * n, n, op);
    h_.barrier();
    return {};
  }
  Request iallgatherv(void* buf, const std::vector<size_t>& counts,
                      const std::vector<size_t>& displs, Type t) override {
    const size_t es = dist::type_size(t);
    publish(buf);
    for (int r = 0; r < h_.world; ++r)
      if (r != rank_ && counts[size_t(r)])
        std::memcpy(static_cast<char*>(buf) + displs[size_t(r)] * es,
                    static_cast<const char*>(h_.slots[size_t(r)]) + displs[size_t(r)] * es,
                    counts[size_t(r)] * es);
    h_.barrier();
    return {};
  }
  Request isend(const void* buf, size_t n, Type t, int peer) override {
    const char* p = static_cast<const char*>(buf);
    std::lock_guard<std::mutex> lk(h_.m);
    h_.mail[{rank_, peer}].emplace_back(p, p + n * dist::type_size(t));
    h_.cv.notify_all();
    return {};
  }
  Request irecv(void* buf, size_t n, Type t, int peer) override {
    auto* r = new Recv{buf, n * dist::type_size(t), peer};
    return {r, false};
  }
  void wait(Request& r) override {
    if (r.done) return;
    auto* rv = static_cast<Recv*>(r.impl);
    std::unique_lock<std::mutex> lk(h_.m);
    auto& q = h_.mail[{rv->peer, rank_}];
    h_.turn.unlock();
    h_.cv.wait(lk, [&] { return !q.empty(); });
    lk.unlock();
    h_.turn.lock();
    lk.lock();
    OLMO_CHECK(q.front().size() == rv->bytes, "ThreadComm: message size mismatch");
    std::memcpy(rv->buf, q.front().data(), rv->bytes);
    q.pop_front();
    delete rv;
    r = {};
  }
  bool test(Request& r) override {
    if (r.done) return true;
    auto* rv = static_cast<Recv*>(r.impl);
    {
      std::lock_guard<std::mutex> lk(h_.m);
      if (h_.mail[{rv->peer, rank_}].empty()) return false;
    }
    wait(r);
    return true;
  }
  void broadcast(void* buf, size_t bytes, int root) override {
    publish(buf);
    if (rank_ != root) std::memcpy(buf, h_.slots[size_t(root)], bytes);
    h_.barrier();
  }
  void barrier() override { h_.barrier(); }
  [[noreturn]] void abort(int code) override { std::fprintf(stderr, "abort %d\n", code); std::abort(); }

 private:
  struct Recv {
    void* buf;
    size_t bytes;
    int peer;
  };
  void publish(const void* p) {
    h_.slots[size_t(rank_)] = p;
    h_.barrier();  // every rank's pointer is in place
  }
  Hub& h_;
  int rank_;
};

}  // namespace olmo::test_comm
