// The one-process communicator (world 1): every collective is a copy or a no-op. Also the
// launcher detection and the world_communicator() factory (see communicator.h).
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "core/runtime.h"
#include "distributed/communicator.h"

namespace olmo::dist {

size_t type_size(Type t) {
  switch (t) {
    case Type::f32: return 4;
    case Type::f64: return 8;
    case Type::i64: return 8;
    case Type::i128: return 16;
  }
  return 0;
}

void Communicator::broadcast(std::string& s, int root) {
  uint64_t n = s.size();
  broadcast(&n, sizeof n, root);
  s.resize(n);
  if (n) broadcast(s.data(), n, root);
}

bool Communicator::any(bool flag) {
  int64_t v = flag ? 1 : 0;
  allreduce(&v, 1, Op::max);
  return v != 0;
}

namespace {
class LocalCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int world() const override { return 1; }
  std::string backend() const override { return "local"; }
  void allreduce(void*, size_t, Type, Op) override {}
  Request ireduce_scatter(const void* send, void* recv, size_t n, Type t, Op) override {
    if (n) std::memcpy(recv, send, n * type_size(t));
    return {};
  }
  Request iallgatherv(void*, const std::vector<size_t>&, const std::vector<size_t>&,
                      Type) override {
    return {};
  }
  Request isend(const void*, size_t, Type, int peer) override { no_peer(peer); }
  Request irecv(void*, size_t, Type, int peer) override { no_peer(peer); }
  void wait(Request& r) override { r.done = true; }
  bool test(Request& r) override { return r.done = true; }
  void broadcast(void*, size_t, int) override {}
  void barrier() override {}
  [[noreturn]] static void no_peer(int peer) {
    throw Error(cat("point-to-point message to rank ", peer, " in a one-process run"));
  }
  [[noreturn]] void abort(int code) override {
    std::fflush(stderr);
    std::_Exit(code);
  }
};
}  // namespace

std::unique_ptr<Communicator> make_local_communicator() {
  return std::make_unique<LocalCommunicator>();
}

bool launched_by_mpi() {
  return runtime().env("OMPI_COMM_WORLD_SIZE") || runtime().env("PMIX_RANK") ||
         runtime().env("PMI_RANK");
}

#ifdef OLMO_HAVE_MPI
std::unique_ptr<Communicator> make_mpi_communicator();  // mpi_communicator.cpp
#endif

Communicator& world_communicator() {
  static std::unique_ptr<Communicator> c = [] {
    if (launched_by_mpi()) {
#ifdef OLMO_HAVE_MPI
      return make_mpi_communicator();
#else
      throw Error("launched by mpirun, but this build of olmo has no MPI (install "
                  "libopenmpi-dev and rebuild)");
#endif
    }
    return make_local_communicator();
  }();
  return *c;
}

}  // namespace olmo::dist
