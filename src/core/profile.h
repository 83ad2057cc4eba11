// Step profiler: wall time and flops per op class, switched on by `olmo bench step --profile`
// or `trainer.profile: true`, off (one relaxed atomic load per scope) otherwise.
//
//   OLMO_PROFILE("attention_fwd", flops);          // times the enclosing block
//   OLMO_PROFILE_SHAPE("gemm", M, N, K, flops);     // key "gemm M×N×K" (one row per shape)
//
// Scopes are opened on the calling (master) thread around whole kernel calls: a kernel that
// fans out over OpenMP threads is timed once, from outside. Nested scopes are not subtracted:
// open them only at leaves (a kernel call), never around a block of kernel calls, so the rows
// add up to the time they cover. Rows are keyed by class + shape string; accumulating a scope
// costs a map lookup (~100 ns), negligible against any kernel it times.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace olmo::profile {

struct Row {
  std::string key;    // "gemm 2048x768x256", "attention_fwd", "optimizer", ...
  std::string klass;  // the op class: the key up to the first space
  double seconds = 0;
  double flops = 0;
  int64_t calls = 0;
};

extern std::atomic<bool> g_enabled;
inline bool enabled() { return g_enabled.load(std::memory_order_relaxed); }
void enable(bool on);
void reset();
void add(const std::string& key, double seconds, double flops);
std::vector<Row> rows();  // sorted by seconds, descending

// The table: one line per row (time ms per step, share of `total_seconds`, GFLOP/s, calls per
// step), then per-class subtotals and the unaccounted remainder ("other"). `steps` divides
// every figure (time and calls are printed per step).
std::string table(double total_seconds, int64_t steps);

class Scope {
 public:
  Scope(const char* klass, double flops) : on_(enabled()) {
    if (on_) begin(klass, flops);
  }
  Scope(const char* klass, int64_t m, int64_t n, int64_t k, double flops) : on_(enabled()) {
    if (on_) begin(klass + (" " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                            std::to_string(k)), flops);
  }
  ~Scope() {
    if (on_) end();
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  void begin(std::string key, double flops);
  void end();
  bool on_;
  std::string key_;
  double flops_ = 0, t0_ = 0;
};

}  // namespace olmo::profile

#define OLMO_PROFILE_CAT2(a, b) a##b
#define OLMO_PROFILE_CAT(a, b) OLMO_PROFILE_CAT2(a, b)
#define OLMO_PROFILE(klass, flops) \
  ::olmo::profile::Scope OLMO_PROFILE_CAT(olmo_profile_, __LINE__)(klass, double(flops))
#define OLMO_PROFILE_SHAPE(klass, m, n, k, flops)                                         \
  ::olmo::profile::Scope OLMO_PROFILE_CAT(olmo_profile_, __LINE__)(klass, int64_t(m),    \
                                                                  int64_t(n), int64_t(k), \
                                                                  double(flops))
