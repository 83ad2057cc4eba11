// Checkpoint format: round trip of f32/i64/u8 tensors (incl. rank 0, empty, sharded pieces read
// whole and as resharded slices) and JSON sections; corrupt checkpoints (flipped tensor byte,
// flipped state.json byte, missing data file, truncated tensor, missing marker) refused with an
// error naming the file and tensor, and latest_complete falls back to the previous complete one;
// leftover stepN-tmp ignored; keep_last; re-saving a step; failing writes while saving (injected
// fault hook, RLIMIT_FSIZE, a full tmpfs and a read-only tmpfs in a private mount namespace) raise
// an error and leave the previous checkpoint intact.
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "ckpt/checkpoint.h"
#include "core/error.h"

namespace fs = std::filesystem;
using namespace olmo::ckpt;

namespace {

std::string fresh_dir(const std::string& tag) {
  std::string d = (fs::temp_directory_path() / ("olmo_ckpt_test_" + tag + "_" + std::to_string(::getpid()))).string();
  fs::remove_all(d);
  return d;
}

std::vector<float> iota_f(size_t n, float start) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

// A small complete checkpoint: tensor "w" [3,5], "ids" [4] i64, JSON "trainer".
std::string save_small(const std::string& run, int64_t step) {
  CheckpointWriter w(run, step);
  auto a = iota_f(15, float(step));
  w.add_tensor("w", a.data(), {3, 5});
  std::vector<int64_t> ids = {1, -2, 3, step};
  w.add_tensor("ids", ids.data(), {4});
  w.add_json("trainer", {{"step", step}});
  return w.commit();
}

void flip_byte(const std::string& path, size_t off) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(off);
  char c;
  f.get(c);
  f.seekp(off);
  f.put(char(c ^ 0x40));
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const olmo::Error& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

}  // namespace

TEST(Checkpoint, RoundTrip) {
  const std::string run = fresh_dir("rt");
  CheckpointWriter w(run, 7);
  auto a = iota_f(2 * 3 * 4, -5.f);
  w.add_tensor("model.w", a.data(), {2, 3, 4});
  std::vector<int64_t> ids = {1, 1LL << 40, -3};
  w.add_tensor("loader.ids", ids.data(), {3});
  std::vector<uint8_t> bytes = {0, 255, 7};
  w.add_tensor("rng", bytes.data(), {3});
  float scalar = 3.25f;
  w.add_tensor("scalar", &scalar, {});
  w.add_tensor("empty", static_cast<const float*>(nullptr), {0, 4});
  // A [4,6] tensor written as two shards: rows 0-1 and rows 2-3.
  auto full = iota_f(24, 100.f);
  w.add_tensor("sharded", full.data(), {4, 6}, {0, 0}, {2, 6});
  w.add_tensor("sharded", full.data() + 12, {4, 6}, {2, 0}, {2, 6});
  w.add_json("trainer", {{"step", 7}, {"tokens", 123456789012LL}});
  w.add_json("config", {{"lr", 3e-4}});
  EXPECT_THROW(w.add_json("config", 1), olmo::Error);
  const std::string dir = w.commit();
  EXPECT_EQ(dir, run + "/step7");
  EXPECT_FALSE(fs::exists(run + "/step7-tmp"));

  CheckpointReader r(dir);
  r.verify();
  EXPECT_EQ(r.step(), 7);
  std::vector<float> a2(24);
  r.read_tensor("model.w", a2.data(), {2, 3, 4});
  EXPECT_EQ(a2, a);
  std::vector<int64_t> ids2(3);
  r.read_tensor("loader.ids", ids2.data(), {3});
  EXPECT_EQ(ids2, ids);
  std::vector<uint8_t> b2(3);
  r.read_tensor("rng", b2.data(), {3});
  EXPECT_EQ(b2, bytes);
  float s2 = 0;
  r.read_tensor("scalar", &s2, {});
  EXPECT_EQ(s2, 3.25f);
  r.read_tensor("empty", static_cast<float*>(nullptr), {0, 4});
  std::vector<float> f2(24);
  r.read_tensor("sharded", f2.data(), {4, 6});
  EXPECT_EQ(f2, full);
  // Resharding read: rows 1-2, columns 2-4 span both stored pieces.
  std::vector<float> sl(2 * 3);
  r.read_slice("sharded", DType::f32, sl.data(), {1, 2}, {2, 3});
  EXPECT_EQ(sl, (std::vector<float>{108, 109, 110, 114, 115, 116}));
  EXPECT_EQ(r.json("trainer")["tokens"].get<int64_t>(), 123456789012LL);
  EXPECT_TRUE(r.has_tensor("rng"));
  EXPECT_FALSE(r.has_tensor("nope"));
  EXPECT_TRUE(has(error_of([&] { r.json("loader"); }), "'loader'"));
  EXPECT_TRUE(has(error_of([&] { r.read_tensor("model.w", a2.data(), {4, 6}); }), "'model.w' has shape [2, 3, 4]"));
  EXPECT_TRUE(has(error_of([&] { r.read_tensor("loader.ids", a2.data(), {3}); }), "stored as i64"));
  EXPECT_TRUE(has(error_of([&] { r.read_tensor("nope", a2.data(), {1}); }), "'nope'"));
  fs::remove_all(run);
}

TEST(Checkpoint, BadTensorGeometryRefused) {
  const std::string run = fresh_dir("geom");
  CheckpointWriter w(run, 1);
  auto a = iota_f(8, 0.f);
  EXPECT_TRUE(has(error_of([&] { w.add_tensor("x", a.data(), {4, 4}, {3, 0}, {2, 4}); }), "outside global shape"));
  EXPECT_TRUE(has(error_of([&] { w.add_tensor("x", a.data(), {4, 4}, {0}, {2, 4}); }), "rank"));
  w.add_tensor("y", a.data(), {4, 4}, {0, 0}, {2, 4});  // only half written
  w.commit();
  CheckpointReader r(run + "/step1");
  std::vector<float> out(16);
  EXPECT_TRUE(has(error_of([&] { r.read_tensor("y", out.data(), {4, 4}); }), "not covered"));
  fs::remove_all(run);
}

TEST(Checkpoint, CorruptionRefusedAndFallback) {
  struct Case {
    const char* what;
    std::function<void(const std::string&)> damage;
    std::vector<std::string> needles;
  };
  std::vector<Case> cases = {
      {"flipped tensor byte", [](const std::string& d) { flip_byte(d + "/tensors-00000.bin", 70); },
       {"tensors-00000.bin", "checksum mismatch", "tensor 'ids'"}},
      {"flipped state byte", [](const std::string& d) { flip_byte(d + "/state.json", 5); }, {"state.json", "checksum"}},
      {"missing data file", [](const std::string& d) { fs::remove(d + "/tensors-00000.bin"); },
       {"tensors-00000.bin", "missing", "tensor 'w'"}},
      {"truncated tensor", [](const std::string& d) { fs::resize_file(d + "/tensors-00000.bin", 80); },
       {"tensors-00000.bin", "truncated", "tensor 'ids'"}},
      {"missing marker", [](const std::string& d) { fs::remove(d + "/COMMITTED"); }, {"incomplete"}},
      {"edited index", [](const std::string& d) { flip_byte(d + "/index.json", 30); }, {"index.json", "checksum"}},
  };
  for (const Case& c : cases) {
    const std::string run = fresh_dir("corrupt");
    save_small(run, 10);
    const std::string bad = save_small(run, 20);
    c.damage(bad);
    std::string err = error_of([&] { CheckpointReader(bad).verify(); });
    for (const auto& n : c.needles) EXPECT_TRUE(has(err, n)) << c.what << ": '" << n << "' not in: " << err;
    std::vector<std::string> warnings;
    auto latest = latest_complete(run, &warnings);
    ASSERT_TRUE(latest.has_value()) << c.what;
    EXPECT_EQ(*latest, run + "/step10") << c.what;
    ASSERT_EQ(warnings.size(), 1u) << c.what;
    EXPECT_TRUE(has(warnings[0], "step20")) << warnings[0];
    fs::remove_all(run);
  }
}

TEST(Checkpoint, TmpDirsIgnoredAndKeepLast) {
  const std::string run = fresh_dir("keep");
  EXPECT_FALSE(latest_complete(run).has_value());
  for (int s = 1; s <= 5; ++s) save_small(run, s * 100);
  {
    CheckpointWriter abandoned(run, 600);  // crashed mid-save: leaves step600-tmp
    auto a = iota_f(15, 0.f);
    abandoned.add_tensor("w", a.data(), {3, 5});
    fs::copy(abandoned.tmp_dir(), run + "/step700-tmp");
  }
  fs::create_directories(run + "/step250-tmp");
  EXPECT_FALSE(fs::exists(run + "/step600-tmp")) << "uncommitted writer must clean up";
  EXPECT_EQ(*latest_complete(run), run + "/step500");
  EXPECT_EQ(list_checkpoints(run), (std::vector<int64_t>{100, 200, 300, 400, 500}));
  keep_last(run, 2);
  EXPECT_EQ(list_checkpoints(run), (std::vector<int64_t>{400, 500}));
  EXPECT_FALSE(fs::exists(run + "/step250-tmp"));
  EXPECT_TRUE(fs::exists(run + "/step700-tmp"));  // newer than the kept ones: left alone
  EXPECT_THROW(keep_last(run, 0), olmo::Error);
  // Re-saving an existing step replaces it atomically.
  {
    CheckpointWriter w(run, 500);
    w.add_json("trainer", {{"again", true}});
    w.commit();
  }
  CheckpointReader r(run + "/step500");
  EXPECT_TRUE(r.json("trainer")["again"].get<bool>());
  EXPECT_FALSE(r.has_tensor("w"));
  EXPECT_FALSE(fs::exists(run + "/step500-old-tmp"));
  fs::remove_all(run);
}

TEST(Checkpoint, InjectedWriteFaultKeepsPrevious) {
  const std::string run = fresh_dir("fault");
  save_small(run, 1);
  for (const std::string target : {"tensors-00000.bin", "state.json", "index.json", "COMMITTED"}) {
    set_write_fault_hook([&](const std::string& file, size_t) { return !has(file, target); });
    std::string err = error_of([&] { save_small(run, 2); });
    set_write_fault_hook(nullptr);
    EXPECT_TRUE(has(err, target) && has(err, "No space left")) << err;
    EXPECT_FALSE(fs::exists(run + "/step2")) << target;
    EXPECT_FALSE(fs::exists(run + "/step2-tmp")) << target;
    EXPECT_EQ(*latest_complete(run), run + "/step1");
  }
  fs::remove_all(run);
}

TEST(Checkpoint, UnwritableRunDir) {
  const std::string base = fresh_dir("unwritable");
  fs::create_directories(base);
  std::ofstream(base + "/file") << "x";
  std::string err = error_of([&] { CheckpointWriter w(base + "/file/run", 1); });
  EXPECT_TRUE(has(err, base + "/file/run")) << err;
  fs::remove_all(base);
}

// RLIMIT_FSIZE in a child: the big save fails with EFBIG, the small earlier one stays complete.
TEST(Checkpoint, FileSizeLimitKeepsPrevious) {
  const std::string run = fresh_dir("rlimit");
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit rl{64 * 1024, 64 * 1024};
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(10);
    try {
      save_small(run, 1);
    } catch (...) {
      _exit(11);
    }
    try {
      CheckpointWriter w(run, 2);
      std::vector<float> big(100000, 1.f);
      w.add_tensor("big", big.data(), {100000});
      w.commit();
      _exit(12);
    } catch (const olmo::Error& e) {
      if (!has(e.what(), "tensors-00000.bin") || !has(e.what(), "File too large")) _exit(13);
    }
    _exit(0);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 0);
  EXPECT_EQ(list_checkpoints(run), std::vector<int64_t>{1});
  EXPECT_EQ(*latest_complete(run), run + "/step1");
  EXPECT_FALSE(fs::exists(run + "/step2-tmp"));
  fs::remove_all(run);
}

// A real disk-full: a 256 KiB tmpfs mounted in a private mount namespace of a child process
// (needs root/CAP_SYS_ADMIN; skipped otherwise). Then the same mount read-only.
TEST(Checkpoint, DiskFullTmpfsKeepsPrevious) {
  const std::string mnt = fresh_dir("tmpfs");
  fs::create_directories(mnt);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (unshare(CLONE_NEWNS) != 0) _exit(77);
    if (mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) _exit(77);
    if (mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=256k") != 0) _exit(77);
    const std::string run = mnt + "/run";
    try {
      save_small(run, 1);
    } catch (...) {
      _exit(11);
    }
    try {
      CheckpointWriter w(run, 2);
      std::vector<float> big(200000, 1.f);  // 800 KB > 256 KiB
      w.add_tensor("big", big.data(), {200000});
      w.commit();
      _exit(12);
    } catch (const olmo::Error& e) {
      if (!has(e.what(), "No space left on device")) _exit(13);
    }
    if (fs::exists(run + "/step2-tmp") || fs::exists(run + "/step2")) _exit(14);
    try {
      if (latest_complete(run) != run + "/step1") _exit(15);
    } catch (...) {
      _exit(16);
    }
    // Read-only run dir.
    if (mount("tmpfs", mnt.c_str(), nullptr, MS_REMOUNT | MS_RDONLY, nullptr) != 0) _exit(17);
    try {
      save_small(run, 3);
      _exit(18);
    } catch (const olmo::Error& e) {
      if (!has(e.what(), "Read-only file system")) _exit(19);
    }
    if (latest_complete(run) != run + "/step1") _exit(20);
    _exit(0);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  fs::remove_all(mnt);
  ASSERT_TRUE(WIFEXITED(st));
  if (WEXITSTATUS(st) == 77) GTEST_SKIP() << "cannot mount a tmpfs here (not root)";
  EXPECT_EQ(WEXITSTATUS(st), 0) << "child failed at check " << WEXITSTATUS(st);
}
