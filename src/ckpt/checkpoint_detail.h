// Internal helpers shared by the checkpoint writer, reader and run-dir housekeeping (not part of
// the public API): format constants, fault-injectable writes, JSON/checksum parsing, stepN names.
#pragma once
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_io.h"

namespace olmo::ckpt::detail {

inline constexpr const char* kFormat = "olmo.cpp-checkpoint";
inline constexpr int kVersion = 1;
inline constexpr const char* kDataFile = "tensors-00000.bin";
inline constexpr const char* kMarker = "COMMITTED";
inline constexpr uint64_t kAlign = 64;

inline std::function<bool(const std::string&, size_t)>& fault_hook() {
  static std::function<bool(const std::string&, size_t)> h;
  return h;
}

inline std::function<uint64_t(const std::string&)>& free_space_hook() {
  static std::function<uint64_t(const std::string&)> h;
  return h;
}

inline std::string shape_str(const std::vector<int64_t>& s) {
  std::string o = "[";
  for (size_t i = 0; i < s.size(); ++i) o += (i ? ", " : "") + std::to_string(s[i]);
  return o + "]";
}

inline int64_t numel_of(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// write() all of [p, p+n) to fd (core's write_all_fd), honouring the fault hook; throws naming `path`.
inline void write_all(int fd, const std::string& path, const void* p, size_t n) {
  if (fault_hook() && !fault_hook()(path, n))
    throw Error(cat(path, ": write failed: ", std::strerror(ENOSPC), " (injected fault)"));
  write_all_fd(fd, path, p, n);
}

// A file inside the stepN-tmp staging directory: written in place and fsynced, no rename of its
// own -- the directory is the unit that is published atomically (core publish_dir).
inline void write_whole_file(const std::string& path, const std::string& data) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  OLMO_CHECK(fd >= 0, path, ": cannot create: ", std::strerror(errno));
  try {
    write_all(fd, path, data.data(), data.size());
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::fsync(fd) != 0) {
    const std::string e = std::strerror(errno);
    ::close(fd);
    throw Error(cat(path, ": fsync failed: ", e));
  }
  OLMO_CHECK(::close(fd) == 0, path, ": close failed: ", std::strerror(errno));
}

inline nlohmann::json parse_json_file(const std::string& path, const std::string& text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(cat(path, ": invalid JSON: ", e.what()));
  }
}

inline uint64_t parse_hex64(const std::string& s, const std::string& where) {
  OLMO_CHECK(s.size() == 16 && s.find_first_not_of("0123456789abcdef") == std::string::npos, where,
             ": bad checksum string '", s, "'");
  return std::stoull(s, nullptr, 16);
}

// Parses "stepN" (exactly) into N.
inline std::optional<int64_t> step_of(const std::string& name) {
  static const std::regex re("^step([0-9]{1,18})$");
  std::smatch m;
  if (!std::regex_match(name, m, re)) return std::nullopt;
  return std::stoll(m[1].str());
}

inline std::optional<int64_t> tmp_step_of(const std::string& name) {
  static const std::regex re("^step([0-9]{1,18})-(old-)?tmp$");
  std::smatch m;
  if (!std::regex_match(name, m, re)) return std::nullopt;
  return std::stoll(m[1].str());
}


}  // namespace olmo::ckpt::detail
