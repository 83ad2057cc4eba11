// Available memory and the memory-plan check (see resource_limits.h).
#include "train/resource_limits.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

#include "core/error.h"
#include "core/runtime.h"

namespace olmo::train {

namespace {

// First line of a small file, or "" if it cannot be read.
std::string first_line(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  if (f) std::getline(f, s);
  return s;
}

bool parse_i64(const std::string& s, int64_t& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (end == s.c_str()) return false;
  out = v;
  return true;
}

void take(AvailableMemory& m, int64_t bytes, const std::string& source) {
  if (bytes < 0) bytes = 0;
  if (m.bytes < 0 || bytes < m.bytes) {
    m.bytes = bytes;
    m.source = source;
  }
}

// The cgroup of this process that has the memory controller: the v1 memory controller's when
// one is listed (a hybrid host lists "0::/..." too, but its unified hierarchy then has no
// memory controller), else the v2 unified "0::/path".
std::string cgroup_path(bool& v2) {
  std::ifstream f("/proc/self/cgroup");
  std::string line, v1, unified;
  bool has_v1 = false, has_v2 = false;
  while (std::getline(f, line)) {
    if (line.rfind("0::", 0) == 0) {
      has_v2 = true;
      unified = line.substr(3);
      continue;
    }
    const auto a = line.find(':'), b = line.find(':', a + 1);
    if (a != std::string::npos && b != std::string::npos) {
      std::stringstream ctrls(line.substr(a + 1, b - a - 1));
      std::string c;
      while (std::getline(ctrls, c, ','))
        if (c == "memory") v1 = line.substr(b + 1), has_v1 = true;
    }
  }
  v2 = !has_v1 && has_v2;
  return v2 ? unified : v1;
}

}  // namespace

AvailableMemory available_memory() {
  AvailableMemory m;
  if (const std::optional<std::string> env = runtime().env("OLMO_TEST_MEM_AVAILABLE")) {
    const char* t = env->c_str();
    int64_t v = 0;
    OLMO_CHECK(parse_i64(t, v) && v >= 0, "OLMO_TEST_MEM_AVAILABLE = '", t,
               "' is not a byte count");
    m.bytes = v;
    m.source = "OLMO_TEST_MEM_AVAILABLE";
    return m;
  }
  {
    std::ifstream f("/proc/meminfo");
    std::string key;
    int64_t kb = 0;
    std::string unit;
    while (f >> key >> kb) {
      std::getline(f, unit);
      if (key == "MemAvailable:") {
        take(m, kb * 1024, "/proc/meminfo MemAvailable");
        break;
      }
    }
  }
  bool v2 = false;
  const std::string cg = cgroup_path(v2);
  // Walk up the hierarchy: a parent's limit binds too.
  std::string p = cg.empty() ? "/" : cg;
  for (;;) {
    const std::string dir = std::string(v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory") +
                            (p == "/" ? "" : p);
    int64_t limit = 0, used = 0;
    const std::string lim_file = dir + (v2 ? "/memory.max" : "/memory.limit_in_bytes");
    const std::string use_file = dir + (v2 ? "/memory.current" : "/memory.usage_in_bytes");
    // v1 reports "no limit" as a huge number (PAGE_COUNTER_MAX pages); treat >= 2^60 as none.
    if (parse_i64(first_line(lim_file), limit) && limit < (int64_t(1) << 60)) {
      if (!parse_i64(first_line(use_file), used)) used = 0;
      take(m, limit - used, lim_file + " - " + use_file.substr(use_file.rfind('/') + 1));
    }
    if (p == "/" || p.empty()) break;
    const auto slash = p.rfind('/');
    p = slash == 0 || slash == std::string::npos ? "/" : p.substr(0, slash);
  }
  return m;
}

void check_memory_plan(int64_t plan_bytes, int64_t local_processes, const std::string& breakdown) {
  const AvailableMemory m = available_memory();
  if (m.bytes < 0) return;
  local_processes = std::max<int64_t>(1, local_processes);
  const double need = double(plan_bytes) * double(local_processes);
  if (need <= double(m.bytes)) return;
  auto gib = [](double b) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f GiB", b / double(int64_t(1) << 30));
    return std::string(buf);
  };
  throw Error(cat("not enough memory to start: the training memory plan needs ", gib(double(plan_bytes)),
                  " per process", local_processes > 1 ? cat(" x ", local_processes,
                  " processes on this node = ", gib(need)) : std::string(),
                  " (", breakdown, "), but only ", gib(double(m.bytes)), " (", m.bytes,
                  " bytes) is available (", m.source, "). Use a smaller data.micro_batch_tokens or "
                  "model, more processes (ZeRO shards the optimizer state), or "
                  "trainer.check_memory=false to start anyway"));
}

}  // namespace olmo::train
