// Run-dir watching for the launcher (see run_watch.h).
#include "launch/run_watch.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

#include "ckpt/checkpoint.h"

namespace fs = std::filesystem;

namespace olmo::launch {

int64_t newest_checkpoint(const std::string& run_dir) {
  const std::vector<int64_t> steps = ckpt::list_checkpoints(run_dir);
  return steps.empty() ? -1 : steps.back();
}

void RunWatch::relaunched(int id) {
  job_ = id;
  start_step_ = last_step_ = -1;
  save_s_.clear();
}

void RunWatch::poll() {
  const std::string path = run_dir_ + "/metrics.jsonl";
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return;
  if (st.st_ino != inode_ || st.st_size < offset_) {  // rewritten: read from the start
    inode_ = st.st_ino;
    offset_ = 0;
    partial_.clear();
    times_ = StepTimes{};
    prev_train_time_ = -1;
  }
  if (st.st_size == offset_) return;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  std::string buf(size_t(st.st_size - offset_), '\0');
  const ssize_t n = ::pread(fd, buf.data(), buf.size(), offset_);
  ::close(fd);
  if (n <= 0) return;
  buf.resize(size_t(n));
  offset_ += n;
  partial_ += buf;
  size_t at = 0;
  for (size_t nl; (nl = partial_.find('\n', at)) != std::string::npos; at = nl + 1) {
    const auto j = nlohmann::json::parse(partial_.begin() + long(at), partial_.begin() + long(nl),
                                         nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("kind")) continue;
    const std::string kind = j["kind"].is_string() ? j["kind"].get<std::string>() : "";
    const int64_t step = j.contains("step") && j["step"].is_number_integer() ? j["step"].get<int64_t>() : -1;
    const std::string event = j.contains("event") && j["event"].is_string() ? j["event"].get<std::string>() : "";
    if (kind == "info" && event == "launch_job" && j.value("job", -1) == job_) start_step_ = step;
    step_time(kind, event, j.contains("time") && j["time"].is_number() ? j["time"].get<double>() : -1);
    if (start_step_ < 0) continue;  // an earlier job's record
    if (kind == "train") last_step_ = std::max(last_step_, step);
    if (kind == "info" && event == "checkpoint" && j.contains("seconds") && j["seconds"].is_number())
      save_s_.push_back(j["seconds"].get<double>());
  }
  partial_.erase(0, at);
}

void RunWatch::step_time(const std::string& kind, const std::string& event, double time) {
  if (kind == "info" && (event == "start" || event == "launch_job")) {  // a new job: no gap
    prev_train_time_ = -1;
    return;
  }
  if (kind != "train") {
    // Periodic work that lengthens a gap; per-step records (param_rms, alarms...) do not.
    between_ = between_ || (kind == "info" && event == "checkpoint") || kind == "eval" ||
               kind == "validation" || kind == "benchmark" || kind == "downstream" || kind == "exposure";
    return;
  }
  if (prev_train_time_ >= 0 && time >= prev_train_time_) {
    const double gap = time - prev_train_time_;
    if (between_)
      times_.longest_heavy_gap = std::max(times_.longest_heavy_gap, gap);
    else
      times_.plain_gaps.push_back(gap);
  }
  prev_train_time_ = time;
  between_ = false;
}

}  // namespace olmo::launch
