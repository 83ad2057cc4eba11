// Communicator over MPI (OpenMPI from Debian), one rank per process, MPI_COMM_WORLD.
// i128 is a contiguous pair of int64 with a user-defined commutative sum operator (__int128
// addition, two's complement: exact and associative, so any reduction tree gives the same bits).
// Errors: MPI_ERRORS_ARE_FATAL (the default) ends the job; abort() is MPI_Abort.
#include <mpi.h>

#include <cstdio>
#include <cstring>

#include "core/error.h"
#include "distributed/communicator.h"
#include "distributed/fixed_point.h"

namespace olmo::dist {

namespace {

void i128_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  const __int128* a = static_cast<const __int128*>(in);
  __int128* b = static_cast<__int128*>(inout);
  for (int i = 0; i < *len; ++i) b[i] += a[i];
}

// One element of a fixed128 block type = n low words then n high words (n from the type size).
void fixed128_sum(void* in, void* inout, int* len, MPI_Datatype* type) {
  int bytes = 0;
  MPI_Type_size(*type, &bytes);
  const size_t n = size_t(bytes) / 16;
  for (int e = 0; e < *len; ++e) {
    const uint64_t* a = static_cast<const uint64_t*>(in) + size_t(e) * 2 * n;
    uint64_t* b = static_cast<uint64_t*>(inout) + size_t(e) * 2 * n;
    add_fixed(b, b + n, a, a + n, n);
  }
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &world_);
    MPI_Type_contiguous(2, MPI_INT64_T, &i128_);
    MPI_Type_commit(&i128_);
    MPI_Op_create(&i128_sum, /*commute=*/1, &i128_sum_op_);
    MPI_Op_create(&fixed128_sum, /*commute=*/1, &fixed128_sum_op_);
    char ver[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;
    MPI_Get_library_version(ver, &n);
    std::string v(ver, size_t(n));
    backend_ = "mpi (" + v.substr(0, v.find(',')) + ")";
  }
  ~MpiCommunicator() override {
    int fin = 0;
    MPI_Finalized(&fin);
    if (fin) return;
    MPI_Op_free(&i128_sum_op_);
    MPI_Op_free(&fixed128_sum_op_);
    for (auto& [n, t] : blocks_) MPI_Type_free(&t);
    MPI_Type_free(&i128_);
    MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int world() const override { return world_; }
  std::string backend() const override { return backend_; }

  void allreduce(void* buf, size_t n, Type t, Op op) override {
    if (n == 0) return;
    MPI_Allreduce(MPI_IN_PLACE, buf, count(n), dtype(t), mpi_op(t, op), MPI_COMM_WORLD);
  }

  Request ireduce_scatter(const void* send, void* recv, size_t n, Type t, Op op) override {
    Request r;
    auto* q = new MPI_Request;
    if (t == Type::fixed128) {  // one block element of 2n words per rank
      OLMO_CHECK(op == Op::sum, "fixed128 supports only sum");
      MPI_Ireduce_scatter_block(send, recv, 1, block_type(n), fixed128_sum_op_, MPI_COMM_WORLD, q);
    } else {
      MPI_Ireduce_scatter_block(send, recv, count(n), dtype(t), mpi_op(t, op), MPI_COMM_WORLD, q);
    }
    r.impl = q;
    r.done = false;
    return r;
  }

  Request iallgatherv(void* buf, const std::vector<size_t>& counts,
                      const std::vector<size_t>& displs, Type t) override {
    OLMO_CHECK(int(counts.size()) == world_ && int(displs.size()) == world_,
               "allgatherv: counts/displs must have one entry per rank");
    auto* st = new Gather;
    st->counts.resize(size_t(world_));
    st->displs.resize(size_t(world_));
    for (int i = 0; i < world_; ++i) {
      st->counts[size_t(i)] = count(counts[size_t(i)]);
      st->displs[size_t(i)] = count(displs[size_t(i)]);
    }
    MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, st->counts.data(), st->displs.data(),
                    dtype(t), MPI_COMM_WORLD, &st->req);
    gathers_.push_back(st);
    Request r;
    r.impl = st;
    r.done = false;
    return r;
  }

  void wait(Request& r) override {
    if (r.done) return;
    MPI_Wait(req_of(r), MPI_STATUS_IGNORE);
    release(r);
  }

  bool test(Request& r) override {
    if (r.done) return true;
    int flag = 0;
    MPI_Test(req_of(r), &flag, MPI_STATUS_IGNORE);
    if (flag) release(r);
    return r.done;
  }

  void broadcast(void* buf, size_t bytes, int root) override {
    if (bytes) MPI_Bcast(buf, count(bytes), MPI_BYTE, root, MPI_COMM_WORLD);
  }
  void barrier() override { MPI_Barrier(MPI_COMM_WORLD); }
  [[noreturn]] void abort(int code) override {
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }

 private:
  struct Gather {
    MPI_Request req;
    std::vector<int> counts, displs;
  };
  static int count(size_t n) {
    OLMO_CHECK(n <= size_t(INT32_MAX), "MPI collective of ", n,
               " elements exceeds MPI's int count (use smaller buckets: dist.bucket_mb)");
    return int(n);
  }
  MPI_Datatype block_type(size_t n) {
    for (auto& [k, t] : blocks_)
      if (k == n) return t;
    MPI_Datatype t;
    MPI_Type_contiguous(count(2 * n), MPI_UINT64_T, &t);
    MPI_Type_commit(&t);
    blocks_.emplace_back(n, t);
    return t;
  }
  MPI_Datatype dtype(Type t) const {
    switch (t) {
      case Type::f32: return MPI_FLOAT;
      case Type::f64: return MPI_DOUBLE;
      case Type::i64: return MPI_INT64_T;
      case Type::i128: return i128_;
      case Type::fixed128: break;  // block types only (reduce-scatter)
    }
    OLMO_CHECK(false, "fixed128 is supported by ireduce_scatter only");
    return MPI_BYTE;
  }
  MPI_Op mpi_op(Type t, Op op) const {
    if (t == Type::i128) {
      OLMO_CHECK(op == Op::sum, "i128 supports only sum");
      return i128_sum_op_;
    }
    return op == Op::sum ? MPI_SUM : MPI_MAX;
  }
  MPI_Request* req_of(Request& r) {
    for (Gather* g : gathers_)
      if (g == r.impl) return &g->req;
    return static_cast<MPI_Request*>(r.impl);
  }
  void release(Request& r) {
    for (size_t i = 0; i < gathers_.size(); ++i)
      if (gathers_[i] == r.impl) {
        delete gathers_[i];
        gathers_.erase(gathers_.begin() + long(i));
        r.impl = nullptr;
        r.done = true;
        return;
      }
    delete static_cast<MPI_Request*>(r.impl);
    r.impl = nullptr;
    r.done = true;
  }

  int rank_ = 0, world_ = 1;
  MPI_Datatype i128_;
  MPI_Op i128_sum_op_, fixed128_sum_op_;
  std::vector<std::pair<size_t, MPI_Datatype>> blocks_;
  std::string backend_;
  std::vector<Gather*> gathers_;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator() {
  return std::make_unique<MpiCommunicator>();
}

}  // namespace olmo::dist
