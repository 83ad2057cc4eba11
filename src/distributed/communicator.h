// The data-parallel communicator: rank, world and the collectives the trainer needs, over
// OpenMPI when the process was launched by mpirun (or any PMIx launcher) and a one-process
// implementation otherwise, so `build/olmo train` without mpirun needs no MPI at run time.
// Contracts:
//   * every collective is called by every rank in the same order with the same counts;
//   * element types: f32, f64, i64 (sum/max), i128 (sum; two's-complement __int128, used for the
//     exact fixed-point sums of dist/fixed_point.h: integer sums are associative, so the result
//     never depends on the reduction tree or the world size); i64 sums carry the exact
//     reduction's int64 fixed point (distributed/scaled_fixed.h);
//   * i-versions start a non-blocking collective and return a handle; the buffers must stay
//     untouched until wait(); test() lets the caller drive progress between compute chunks;
//   * errors are fatal for the job: an MPI failure, or a rank that dies, ends every rank
//     (OpenMPI's default error handler and mpirun's process monitoring), never a hang.
// Cost: the MPI implementation moves bytes over shared memory (one node) or the network;
// reduce-scatter + all-gather move 2 * (W-1)/W * n elements per rank (the MPI one sends each
// rank's block straight to its owner: one round of W-1 messages per rank).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace olmo::dist {

enum class Type { f32, f64, i64, i128 };
enum class Op { sum, max };
size_t type_size(Type t);

class Communicator {
 public:
  // Opaque handle of a non-blocking collective.
  struct Request {
    void* impl = nullptr;
    bool done = true;
  };

  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world() const = 0;
  virtual std::string backend() const = 0;  // "local" | "mpi (OpenMPI x.y)"

  // buf[n] on every rank becomes the element-wise reduction over ranks.
  virtual void allreduce(void* buf, size_t n, Type t, Op op) = 0;
  // send[world * n] (rank r's block of n elements = send[r*n, (r+1)*n) across ranks is
  // reduced into recv[n] of rank r). send and recv must not overlap.
  virtual Request ireduce_scatter(const void* send, void* recv, size_t n, Type t, Op op) = 0;
  // In place: rank r contributes buf[displs[r], displs[r] + counts[r]); afterwards every rank
  // holds every block.
  virtual Request iallgatherv(void* buf, const std::vector<size_t>& counts,
                              const std::vector<size_t>& displs, Type t) = 0;
  // Point to point (tag: the gradient stream's, grad_stream.h): buf[n] to / from rank peer.
  // Messages between two ranks match in posting order. The one-process communicator has no peer.
  virtual Request isend(const void* buf, size_t n, Type t, int peer) = 0;
  virtual Request irecv(void* buf, size_t n, Type t, int peer) = 0;
  virtual void wait(Request& r) = 0;
  virtual bool test(Request& r) = 0;
  virtual void broadcast(void* buf, size_t bytes, int root) = 0;
  virtual void barrier() = 0;
  // Ends the whole job with this exit code (every rank), after flushing stderr.
  [[noreturn]] virtual void abort(int code) = 0;

  // Conveniences.
  void allreduce(double* x, size_t n, Op op = Op::sum) { allreduce(x, n, Type::f64, op); }
  void allreduce(int64_t* x, size_t n, Op op = Op::sum) { allreduce(x, n, Type::i64, op); }
  void allgatherv(void* buf, const std::vector<size_t>& counts, const std::vector<size_t>& displs,
                  Type t) {
    Request r = iallgatherv(buf, counts, displs, t);
    wait(r);
  }
  void broadcast(std::string& s, int root);
  // True on every rank when `flag` is true on any rank.
  bool any(bool flag);
};

// The communicator of this process: MPI when launched by mpirun (OMPI_COMM_WORLD_SIZE or
// PMIX_RANK in the environment) and this build has MPI, else the one-process one. The first call
// initialises MPI; later calls return the same object. Throws olmo::Error when launched by
// mpirun but built without MPI.
Communicator& world_communicator();
// True when the environment says this process was started by an MPI launcher.
bool launched_by_mpi();
// A one-process communicator (tests, tools).
std::unique_ptr<Communicator> make_local_communicator();

}  // namespace olmo::dist
