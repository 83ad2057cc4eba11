// Run-dir housekeeping: newest verified checkpoint with fallback, listing, keep-last-N.
#include "ckpt/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>

#include "ckpt/checkpoint_detail.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/hash.h"

namespace fs = std::filesystem;

namespace olmo::ckpt {

using namespace detail;

// ---------------------------------------------------------------------------------------------
// Run-dir housekeeping

std::optional<std::string> latest_complete(const std::string& run_dir, std::vector<std::string>* warnings) {
  std::error_code ec;
  if (!fs::is_directory(run_dir, ec)) return std::nullopt;
  std::vector<std::pair<int64_t, std::string>> cands;
  for (const auto& de : fs::directory_iterator(run_dir, ec)) {
    if (!de.is_directory()) continue;
    if (auto s = step_of(de.path().filename().string())) cands.emplace_back(*s, de.path().string());
  }
  std::sort(cands.rbegin(), cands.rend());
  for (const auto& [step, path] : cands) {
    try {
      CheckpointReader r(path);
      r.verify();
      return path;
    } catch (const Error& e) {
      const std::string msg = cat("warning: skipping checkpoint ", path, ": ", e.what());
      if (warnings) warnings->push_back(msg);
      else std::cerr << msg << "\n";
    }
  }
  return std::nullopt;
}

std::vector<int64_t> list_checkpoints(const std::string& run_dir) {
  std::vector<int64_t> out;
  std::error_code ec;
  if (!fs::is_directory(run_dir, ec)) return out;
  for (const auto& de : fs::directory_iterator(run_dir, ec)) {
    if (!de.is_directory()) continue;
    auto s = step_of(de.path().filename().string());
    if (s && file_exists((de.path() / kMarker).string())) out.push_back(*s);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void keep_last(const std::string& run_dir, int n) {
  OLMO_CHECK(n >= 1, "keep_last: n must be >= 1, got ", n);
  const std::vector<int64_t> steps = list_checkpoints(run_dir);
  if (steps.size() <= static_cast<size_t>(n)) return;
  const int64_t oldest_kept = steps[steps.size() - static_cast<size_t>(n)];
  std::error_code ec;
  for (const auto& de : fs::directory_iterator(run_dir, ec)) {
    if (!de.is_directory()) continue;
    const std::string fname = de.path().filename().string();
    auto s = step_of(fname);
    if (!s) s = tmp_step_of(fname);
    if (s && *s < oldest_kept) {
      std::error_code ec2;
      fs::remove_all(de.path(), ec2);
      OLMO_CHECK(!ec2, de.path().string(), ": cannot delete old checkpoint: ", ec2.message());
    }
  }
  fsync_dir(run_dir);
}

}  // namespace olmo::ckpt
