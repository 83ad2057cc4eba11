// JSONL metrics file (see metrics_log.h).
#include "train/metrics_log.h"

#include <sstream>

#include "core/error.h"
#include "core/file_io.h"

namespace olmo::train {

MetricsLog::MetricsLog(const std::string& path) : path_(path) {
  if (path.empty()) return;  // disabled (ranks > 0)
  f_ = std::fopen(path.c_str(), "a");
  OLMO_CHECK(f_, "cannot open metrics file ", path, " for appending");
}

MetricsLog::~MetricsLog() {
  if (f_) std::fclose(f_);
}

void MetricsLog::write(const nlohmann::json& record) {
  if (path_.empty()) return;
  std::string line = record.dump() + "\n";
  OLMO_CHECK(std::fwrite(line.data(), 1, line.size(), f_) == line.size() && std::fflush(f_) == 0,
             "cannot write metrics file ", path_);
}

void MetricsLog::truncate_after(int64_t step) {
  if (path_.empty()) return;
  std::fclose(f_);
  f_ = nullptr;
  std::string kept;
  if (file_exists(path_)) {
    std::istringstream in(read_file(path_));
    std::string line;
    while (std::getline(in, line)) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object()) continue;
      if (j.contains("step") && j["step"].is_number_integer() && j["step"].get<int64_t>() > step)
        continue;
      kept += line + "\n";
    }
  }
  write_file_atomic(path_, kept);
  f_ = std::fopen(path_.c_str(), "a");
  OLMO_CHECK(f_, "cannot reopen metrics file ", path_);
}

}  // namespace olmo::train
