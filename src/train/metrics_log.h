// Run metrics as JSON Lines: RUN_DIR/metrics.jsonl, one object per record, flushed per line so a
// crash loses at most the line being written. Records carry "kind" ("train" | "eval" | "info")
// and "step". On resume from step N, truncate_after(N) drops records of steps > N (they belong
// to the steps that will be re-run), so the file never holds two different values for a step.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

namespace olmo::train {

class MetricsLog {
 public:
  // Opens for append (creates). An empty path is a disabled log (writes nothing): the log of
  // data-parallel ranks > 0, whose records rank 0 writes.
  explicit MetricsLog(const std::string& path);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;

  void write(const nlohmann::json& record);
  // Rewrites the file atomically keeping lines whose "step" <= step (malformed lines dropped).
  void truncate_after(int64_t step);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  FILE* f_ = nullptr;
};

}  // namespace olmo::train
