// Helpers shared by the libFuzzer targets in tests/fuzz: a per-process scratch directory (removed
// at exit) and writing the fuzz bytes to a file there, for parsers whose entry point takes a path.
// Every target catches olmo::Error only: any other exception, a crash or a sanitizer report is a
// finding (the contract is "bad input -> olmo::Error naming the file and the problem").
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

namespace olmo::fuzz {

// /tmp/olmo-fuzz-XXXXXX, created once per process, removed at exit.
inline const std::string& scratch_dir() {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/olmo-fuzz-XXXXXX";
    if (!mkdtemp(tmpl)) {
      std::perror("mkdtemp");
      std::abort();
    }
    std::string d = tmpl;
    static std::string to_remove = d;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(to_remove, ec);
    });
    return d;
  }();
  return dir;
}

// Writes bytes to scratch_dir()/name (replacing it) and returns the path.
inline std::string write_scratch(const std::string& name, std::string_view bytes) {
  const std::string path = scratch_dir() + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) {
    std::perror(path.c_str());
    std::abort();
  }
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) std::abort();
  std::fclose(f);
  return path;
}

inline std::string_view as_view(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace olmo::fuzz

// With OLMO_FUZZ_VERBOSE set, prints each olmo::Error a target swallows (to check that seeds
// reach deep into a format, and to read the messages hostile inputs get).
#define OLMO_FUZZ_NOTE(e)                                              \
  do {                                                                 \
    if (std::getenv("OLMO_FUZZ_VERBOSE")) std::fprintf(stderr, "  error: %s\n", (e).what()); \
  } while (0)
