// Resource limits checked before a run starts (issue 11): the per-process training memory plan
// (model/flops.h memory_plan: weights, gradients, AdamW moments, ZeRO shards, activations)
// against the memory this machine will actually give, so a run that cannot fit is refused with
// the need and the limit named instead of being OOM-killed in the middle of a step.
// Available memory = the smallest of
//   /proc/meminfo MemAvailable                          (what the kernel can hand out now)
//   cgroup v2 memory.max - memory.current               (the cgroup of this process, if limited)
//   cgroup v1 memory.limit_in_bytes - memory.usage_in_bytes
// OLMO_TEST_MEM_AVAILABLE=<bytes> replaces the measurement (tests). Processes of one job on this
// node (OMPI_COMM_WORLD_LOCAL_SIZE) share it: the need is plan x local processes. The plan is a
// lower bound (no allocator slack, kernel scratch or token-file page cache), so passing the check
// does not promise a fit; failing it promises an OOM.
#pragma once
#include <cstdint>
#include <string>

namespace olmo::train {

struct AvailableMemory {
  int64_t bytes = -1;      // -1: unknown (no /proc/meminfo; the check is skipped)
  std::string source;      // which limit was the smallest, e.g. "/proc/meminfo MemAvailable"
};
AvailableMemory available_memory();

// Throws olmo::Error naming the need (per process and for `local_processes`), the limit and its
// source when plan_bytes * local_processes exceeds the available memory. `breakdown` is appended
// to the message (what the plan consists of).
void check_memory_plan(int64_t plan_bytes, int64_t local_processes, const std::string& breakdown);

}  // namespace olmo::train
