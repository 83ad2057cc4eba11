// JSONL metrics file and its TensorBoard mirror (see metrics_log.h).
#include "train/metrics_log.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "core/error.h"
#include "core/file_io.h"

namespace olmo::train {

namespace {

// Unix time in seconds, rounded to the millisecond (exactly what the JSON line then holds).
double unix_time_ms() {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::system_clock::now().time_since_epoch());
  return double(ms.count()) / 1000.0;
}

void add_scalars(const std::string& prefix, const nlohmann::json& obj, bool top,
                 std::vector<TbScalar>& out) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string& key = it.key();
    if (top && (key == "kind" || key == "step" || key == "time" || key == "batch_hash")) continue;
    const std::string tag = key.find('/') != std::string::npos ? key : prefix + "/" + key;
    const auto& v = it.value();
    if (v.is_boolean())
      out.push_back({tag, v.get<bool>() ? 1.0f : 0.0f});
    else if (v.is_number())
      out.push_back({tag, float(v.get<double>())});
    else if (v.is_object())
      add_scalars(tag, v, false, out);
  }
}

}  // namespace

std::vector<TbScalar> tensorboard_scalars(const nlohmann::json& r) {
  std::vector<TbScalar> out;
  if (!r.is_object() || !r.contains("step") || !r["step"].is_number_integer()) return out;
  const std::string kind = r.value("kind", "");
  if (kind.empty() || kind == "info" || kind == "profile") return out;
  if (kind == "alarm") {
    out.push_back({"alarm/" + r.value("source", "?") + "/" + r.value("cause", "?"), 1.0f});
    return out;
  }
  const char* by = kind == "eval" ? "set" : kind == "benchmark" ? "suite"
                 : kind == "downstream" ? "task" : nullptr;
  std::string prefix = kind;
  nlohmann::json fields = r;
  if (by && r.contains(by) && r[by].is_string()) {
    prefix += "/" + r[by].get<std::string>();
    fields.erase(by);
  }
  add_scalars(prefix, fields, true, out);
  return out;
}

MetricsLog::MetricsLog(const std::string& path) : path_(path) {
  if (path.empty()) return;  // disabled (ranks > 0)
  f_ = std::fopen(path.c_str(), "a");
  OLMO_CHECK(f_, "cannot open metrics file ", path, " for appending");
  tb_ = std::make_unique<TfEventsWriter>(
      (std::filesystem::path(path).parent_path() / "tb").string());
}

MetricsLog::~MetricsLog() {
  if (f_) std::fclose(f_);
}

void MetricsLog::write(const nlohmann::json& record) {
  if (path_.empty()) return;
  nlohmann::json r = record;
  if (r.is_object() && !r.contains("time")) r["time"] = clock_ ? clock_() : unix_time_ms();
  std::string line = r.dump() + "\n";
  OLMO_CHECK(std::fwrite(line.data(), 1, line.size(), f_) == line.size() && std::fflush(f_) == 0,
             "cannot write metrics file ", path_);
  std::vector<TbScalar> scalars = tensorboard_scalars(r);
  if (!scalars.empty())
    tb_->write_scalars(r["time"].is_number() ? r["time"].get<double>() : unix_time_ms(),
                       r["step"].get<int64_t>(), scalars);
}

void MetricsLog::truncate_after(int64_t step) {
  if (path_.empty()) return;
  std::fclose(f_);
  f_ = nullptr;
  std::string kept;
  std::vector<nlohmann::json> kept_records;
  if (file_exists(path_)) {
    std::istringstream in(read_file(path_));
    std::string line;
    while (std::getline(in, line)) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object()) continue;
      if (j.contains("step") && j["step"].is_number_integer() && j["step"].get<int64_t>() > step)
        continue;
      kept += line + "\n";
      kept_records.push_back(std::move(j));
    }
  }
  write_file_atomic(path_, kept);
  f_ = std::fopen(path_.c_str(), "a");
  OLMO_CHECK(f_, "cannot reopen metrics file ", path_);
  // No event file left (a run dir of a build before TensorBoard files, or tb/ deleted): the
  // kept records go to the new file first, so TensorBoard shows the whole run.
  if (!tb_->truncate_after(step))
    for (const auto& r : kept_records)
      if (auto sc = tensorboard_scalars(r); !sc.empty())
        tb_->write_scalars(r.contains("time") && r["time"].is_number() ? r["time"].get<double>()
                                                                       : unix_time_ms(),
                           r["step"].get<int64_t>(), sc);
}

}  // namespace olmo::train
