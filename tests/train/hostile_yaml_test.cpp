// Hostile-but-valid YAML training configs (issue 11): a billion-laughs document (nine levels of
// anchors, each aliasing the previous nine times: 9^9 = 387M leaves if expanded), a recursive
// anchor (a map that contains itself), 10,000-deep nesting, and `base:` pointing at a device
// (/dev/zero) or a directory. Each must end quickly in an olmo::Error naming the file and the
// key, with bounded memory (aliases are never expanded: max RSS grows by < 256 MB).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "train/config.h"

namespace fs = std::filesystem;
using namespace olmo::train;

namespace {

std::string write_yaml(const std::string& name, const std::string& text) {
  const fs::path d = fs::temp_directory_path() / ("olmo_hostile_yaml_" + std::to_string(::getpid()));
  fs::create_directories(d);
  const std::string p = (d / name).string();
  std::ofstream(p) << text;
  return p;
}

struct Cleanup {
  ~Cleanup() { fs::remove_all(fs::temp_directory_path() / ("olmo_hostile_yaml_" + std::to_string(::getpid()))); }
} cleanup;

long max_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024;
}

// load_config(path) must throw an olmo::Error containing every `want`, within 10 s and 256 MB.
void expect_refused(const std::string& path, const std::vector<std::string>& want) {
  const long rss0 = max_rss_mb();
  const auto t0 = std::chrono::steady_clock::now();
  std::string msg = "<no error>";
  try {
    Config c = load_config(path);
    validate(c, false);
  } catch (const olmo::Error& e) {
    msg = e.what();
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 10.0) << path;
  EXPECT_LT(max_rss_mb() - rss0, 256) << path;
  for (const auto& w : want) EXPECT_NE(msg.find(w), std::string::npos) << msg;
}

std::string laughs(const std::string& use) {
  std::string y = "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int i = 1; i <= 8; ++i) {
    y += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 9; ++k) y += (k ? ", *a" : "*a") + std::to_string(i - 1);
    y += "]\n";
  }
  return y + use;
}

}  // namespace

TEST(HostileYaml, BillionLaughsUnderUnknownKeyRefused) {
  const std::string p = write_yaml("laughs.yaml", laughs(""));
  expect_refused(p, {p + ":1", "unknown key 'a0'"});
}

TEST(HostileYaml, BillionLaughsAsAFieldValueRefused) {
  // The bomb as the value of a list-of-integers field (its anchors defined inside the list):
  // the first element is a list, refused before anything is expanded.
  std::string y = "model:\n  window_pattern: [";
  y += "&a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]";
  for (int i = 1; i <= 8; ++i) {
    y += ", &a" + std::to_string(i) + " [";
    for (int k = 0; k < 9; ++k) y += (k ? ", *a" : "*a") + std::to_string(i - 1);
    y += "]";
  }
  y += "]\n";
  const std::string p = write_yaml("laughs_field.yaml", y);
  expect_refused(p, {p + ":2", "model.window_pattern[0]", "must be an integer, got a list"});
}

TEST(HostileYaml, BillionLaughsAsAMapFieldRefused) {
  std::string y = laughs("eval:\n  sets: *a8\n");
  const std::string p = write_yaml("laughs_map.yaml", y);
  expect_refused(p, {p + ":1", "unknown key 'a0'"});
  // Without the anchors at the top level: the map field gets a list of lists.
  std::string y2 = "eval:\n  sets: ";
  y2 += "&a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  y2 += "validation:\n  sets: &a1 [*a0, *a0, *a0, *a0, *a0, *a0, *a0, *a0, *a0]\n";
  const std::string p2 = write_yaml("laughs_map2.yaml", y2);
  expect_refused(p2, {p2 + ":2", "eval.sets", "must be a map of label: path"});
}

TEST(HostileYaml, RecursiveAnchorRefused) {
  // `model` contains itself: walking it must stop at the first unknown key.
  const std::string p = write_yaml("recursive.yaml", "model: &m\n  d_model: 64\n  self: *m\n");
  expect_refused(p, {p + ":3", "unknown key 'model.self'"});
  const std::string p2 = write_yaml("recursive_list.yaml", "model:\n  window_pattern: &w [1, *w]\n");
  expect_refused(p2, {p2, "model.window_pattern"});
}

TEST(HostileYaml, DeepNestingRefused) {
  const std::string p = write_yaml("deep.yaml", "name: " + std::string(10000, '[') + std::string(10000, ']') + "\n");
  expect_refused(p, {p, "YAML error"});
}

TEST(HostileYaml, BaseThatIsADeviceOrADirectoryRefused) {
  const std::string p = write_yaml("dev.yaml", "base: /dev/zero\nname: x\n");
  expect_refused(p, {"/dev/zero", "not a regular file"});
  const std::string p2 = write_yaml("dir.yaml", "base: .\nname: x\n");
  expect_refused(p2, {"not a regular file"});
}
