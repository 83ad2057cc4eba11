// Step profiler accumulators and the per-op-class table (see profile.h).
#include "core/profile.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>

#include "core/timer.h"

namespace olmo::profile {

std::atomic<bool> g_enabled{false};

namespace {
std::mutex g_mu;
std::map<std::string, Row>& table_rows() {
  static std::map<std::string, Row> m;
  return m;
}
}  // namespace

void enable(bool on) { g_enabled.store(on, std::memory_order_relaxed); }

void reset() {
  std::lock_guard<std::mutex> lock(g_mu);
  table_rows().clear();
}

void add(const std::string& key, double seconds, double flops) {
  std::lock_guard<std::mutex> lock(g_mu);
  Row& r = table_rows()[key];
  if (r.key.empty()) {
    r.key = key;
    r.klass = key.substr(0, key.find(' '));
  }
  r.seconds += seconds;
  r.flops += flops;
  r.calls += 1;
}

std::vector<Row> rows() {
  std::vector<Row> out;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    for (auto& [k, r] : table_rows()) out.push_back(r);
  }
  std::sort(out.begin(), out.end(),
            [](const Row& a, const Row& b) { return a.seconds > b.seconds; });
  return out;
}

std::string table(double total_seconds, int64_t steps) {
  const double s = steps > 0 ? double(steps) : 1.0;
  const std::vector<Row> rs = rows();
  std::string out;
  char line[256];
  auto emit = [&](const std::string& key, double sec, double flops, double calls) {
    const double gf = sec > 0 && flops > 0 ? flops / sec * 1e-9 : 0.0;
    const double share = total_seconds > 0 ? 100.0 * sec / total_seconds : 0.0;
    if (gf > 0)
      std::snprintf(line, sizeof line, "  %-34s %10.2f %6.1f%% %9.1f %8.0f\n", key.c_str(),
                    1e3 * sec / s, share, gf, calls / s);
    else
      std::snprintf(line, sizeof line, "  %-34s %10.2f %6.1f%% %9s %8.0f\n", key.c_str(),
                    1e3 * sec / s, share, "-", calls / s);
    out += line;
  };
  std::snprintf(line, sizeof line, "  %-34s %10s %7s %9s %8s\n", "op", "ms/step", "share",
                "GFLOP/s", "calls");
  out += line;
  std::map<std::string, Row> classes;
  double covered = 0;
  for (const Row& r : rs) {
    emit(r.key, r.seconds, r.flops, double(r.calls));
    Row& c = classes[r.klass];
    c.key = r.klass;
    c.seconds += r.seconds;
    c.flops += r.flops;
    c.calls += r.calls;
    covered += r.seconds;
  }
  std::vector<Row> cs;
  for (auto& [k, c] : classes) cs.push_back(c);
  std::sort(cs.begin(), cs.end(),
            [](const Row& a, const Row& b) { return a.seconds > b.seconds; });
  out += "  -- per class --\n";
  for (const Row& c : cs) emit(c.key, c.seconds, c.flops, double(c.calls));
  emit("other (not in any scope)", std::max(0.0, total_seconds - covered), 0, 0);
  std::snprintf(line, sizeof line, "  %-34s %10.2f %6.1f%%\n", "step (wall)",
                1e3 * total_seconds / s, 100.0);
  out += line;
  return out;
}

void Scope::begin(std::string key, double flops) {
  key_ = std::move(key);
  flops_ = flops;
  t0_ = now_seconds();
}

void Scope::end() { add(key_, now_seconds() - t0_, flops_); }

}  // namespace olmo::profile
