// Run-dir housekeeping: newest verified checkpoint with fallback, listing, keep-last-N, free space.
#include "ckpt/checkpoint.h"

#include <fcntl.h>
#include <sys/statvfs.h>
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

bool is_committed(const std::string& dir) { return file_exists(cat(dir, "/", kMarker)); }

std::string state_file(const std::string& dir) { return cat(dir, "/state.json"); }

bool looks_like_checkpoint(const std::string& dir) {
  fs::path p(dir);
  std::string name = p.filename().string();
  if (name.empty()) name = p.parent_path().filename().string();
  return is_committed(dir) || file_exists(cat(dir, "/index.json")) || file_exists(state_file(dir)) ||
         file_exists(cat(dir, "/", kDataFile)) || step_of(name) || tmp_step_of(name);
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

void keep_last(const std::string& run_dir, int n, int64_t keep_step) {
  OLMO_CHECK(n >= 1, "keep_last: n must be >= 1, got ", n);
  std::vector<int64_t> steps = list_checkpoints(run_dir);
  // The protected one first, then the newest others: the n kept.
  std::vector<int64_t> kept;
  if (keep_step >= 0 && std::find(steps.begin(), steps.end(), keep_step) != steps.end())
    kept.push_back(keep_step);
  for (auto it = steps.rbegin(); it != steps.rend() && kept.size() < size_t(n); ++it)
    if (*it != keep_step) kept.push_back(*it);
  if (kept.size() == steps.size()) return;
  const int64_t oldest_kept = *std::min_element(kept.begin(), kept.end());
  std::error_code ec;
  for (const auto& de : fs::directory_iterator(run_dir, ec)) {
    if (!de.is_directory()) continue;
    const std::string fname = de.path().filename().string();
    auto s = step_of(fname);
    const bool tmp = !s;
    if (!s) s = tmp_step_of(fname);
    // Committed dirs not kept go; a tmp dir (or uncommitted stepN) only when older than every
    // kept one (a newer one may be a save in progress).
    const bool committed = !tmp && std::find(steps.begin(), steps.end(), *s) != steps.end();
    const bool drop = s && (committed ? std::find(kept.begin(), kept.end(), *s) == kept.end()
                                      : *s < oldest_kept);
    if (drop) {
      std::error_code ec2;
      fs::remove_all(de.path(), ec2);
      OLMO_CHECK(!ec2, de.path().string(), ": cannot delete old checkpoint: ", ec2.message());
    }
  }
  fsync_dir(run_dir);
}

void set_free_space_hook(std::function<uint64_t(const std::string&)> hook) {
  free_space_hook() = std::move(hook);
}

uint64_t free_bytes(const std::string& dir) {
  if (free_space_hook()) return free_space_hook()(dir);
  struct statvfs v {};
  OLMO_CHECK(::statvfs(dir.c_str(), &v) == 0, dir, ": statvfs failed: ", std::strerror(errno));
  return uint64_t(v.f_bavail) * uint64_t(v.f_frsize);
}

void check_free_space(const std::string& run_dir, uint64_t need, const std::string& what) {
  const uint64_t margin = need / 20 + (uint64_t(1) << 20);
  // A run dir not created yet: the file system of its nearest existing ancestor.
  fs::path at = fs::absolute(fs::path(run_dir));
  std::error_code ec;
  while (!fs::exists(at, ec) && at.has_parent_path() && at.parent_path() != at) at = at.parent_path();
  const uint64_t free = free_bytes(at.string());
  OLMO_CHECK(free >= need + margin, what, ": not enough free space in ", run_dir, ": the checkpoint "
             "needs ", need, " bytes (+ ", margin, " margin = ", need + margin, " bytes, ",
             (need + margin) >> 20, " MiB) but the file system has ", free, " bytes (",
             free >> 20, " MiB) free; nothing was written (free space, or lower trainer.keep_last)");
}

}  // namespace olmo::ckpt
