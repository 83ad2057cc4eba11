// core/file_io: atomic writes (write_file_atomic, AtomicFile, publish_dir) never expose a partial
// file under the final name, keep the previous file on failure (a write cut by RLIMIT_FSIZE, a
// failing rename, an exception before commit), fsync file -> rename -> fsync directory in that
// order (fsync and rename are interposed below: this binary's own definitions, which core's
// calls resolve to, log each call and forward to the kernel); errors name the path and the OS
// reason. Also: mmap sees the bytes, hashes.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/file_io.h"
#include "core/hash.h"

namespace fs = std::filesystem;

// ---- interposed fsync / rename: a log of ("fsync", what the fd names) and ("rename", to) ---------

static bool g_logging = false;
static std::vector<std::string> g_log;

extern "C" int fsync(int fd) {
  if (g_logging) {
    char buf[4096];
    const ssize_t n = ::readlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), buf, sizeof buf);
    g_log.push_back("fsync " + (n > 0 ? std::string(buf, size_t(n)) : std::string("?")));
  }
  return int(::syscall(SYS_fsync, fd));
}

extern "C" int rename(const char* from, const char* to) {
  if (g_logging) g_log.push_back(std::string("rename ") + from + " -> " + to);
  return ::renameat(AT_FDCWD, from, AT_FDCWD, to);
}

static fs::path tmpdir() {
  fs::path d = fs::temp_directory_path() / ("olmo_core_test_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

TEST(FileIo, AtomicWriteReplacesAndLeavesNoTemp) {
  fs::path d = tmpdir();
  std::string p = (d / "a.bin").string();
  olmo::write_file_atomic(p, "first");
  olmo::write_file_atomic(p, "second");
  EXPECT_EQ(olmo::read_file(p), "second");
  int n = 0;
  for (auto& e : fs::directory_iterator(d)) n += e.path().filename().string().rfind("a.bin", 0) == 0;
  EXPECT_EQ(n, 1);
  fs::remove_all(d);
}

TEST(FileIo, ErrorsNameThePath) {
  try {
    olmo::read_file("/nonexistent/dir/x.txt");
    FAIL();
  } catch (const olmo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/x.txt"), std::string::npos);
  }
  EXPECT_THROW(olmo::write_file_atomic("/nonexistent/dir/y.txt", "x"), olmo::Error);
}

static std::vector<std::string> names_in(const fs::path& d) {
  std::vector<std::string> out;
  for (auto& e : fs::directory_iterator(d)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

static std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const olmo::Error& e) {
    return e.what();
  }
  return "";
}

// Streaming: nothing under the final name until commit; the pieces land whole and in order.
TEST(FileIo, AtomicFileIsInvisibleUntilCommit) {
  fs::path d = tmpdir() / "stream";
  fs::create_directories(d);
  const std::string p = (d / "out.bin").string();
  olmo::write_file_atomic(p, "old");
  std::string want;
  {
    olmo::AtomicFile f(p);
    EXPECT_EQ(fs::path(f.temp_path()).parent_path(), d);  // same directory: rename is atomic
    for (int i = 0; i < 300; ++i) {
      std::string piece(size_t(i * 997 % 70000), char('a' + i % 26));  // crosses the 64 KiB buffer
      f.write(piece);
      want += piece;
      if (i % 50 == 0) {
        EXPECT_EQ(olmo::read_file(p), "old");
      }
    }
    EXPECT_EQ(f.bytes_written(), want.size());
    EXPECT_EQ(olmo::read_file(p), "old");
    f.commit();
    EXPECT_THROW(f.write("x"), olmo::Error);
  }
  EXPECT_EQ(olmo::read_file(p), want);
  EXPECT_EQ(names_in(d), std::vector<std::string>{"out.bin"});
  fs::remove_all(d);
}

// An exception between the first write and commit: the temporary goes, the old file stays.
TEST(FileIo, AtomicFileAbandonedKeepsPrevious) {
  fs::path d = tmpdir() / "abandon";
  fs::create_directories(d);
  const std::string p = (d / "keep.json").string();
  olmo::write_file_atomic(p, "{\"v\": 1}\n");
  try {
    olmo::AtomicFile f(p);
    f.write(std::string(200000, 'x'));
    throw std::runtime_error("producer failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(olmo::read_file(p), "{\"v\": 1}\n");
  EXPECT_EQ(names_in(d), std::vector<std::string>{"keep.json"});
  fs::remove_all(d);
}

// A write cut short by the OS (RLIMIT_FSIZE in a child: write fails with EFBIG once the file
// passes 64 KiB): the error names the file and the reason, the final name still holds the
// previous content whole, no temporary is left behind.
TEST(FileIo, FailedWriteKeepsPreviousAndNamesFile) {
  fs::path d = tmpdir() / "fsize";
  fs::create_directories(d);
  const std::string p = (d / "model.safetensors").string();
  const std::string old(1000, 'o');
  olmo::write_file_atomic(p, old);
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(pipefd[0]);
    ::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of a signal
    struct rlimit rl = {1 << 16, 1 << 16};
    ::setrlimit(RLIMIT_FSIZE, &rl);
    std::string msg = error_of([&] { olmo::write_file_atomic(p, std::string(1 << 20, 'n')); });
    msg += "\n" + error_of([&] {  // the streaming form, cut inside a large piece
      olmo::AtomicFile f(p);
      f.write(std::string(1000, 'a'));
      f.write(std::string(1 << 18, 'b'));
      f.commit();
    });
    if (::write(pipefd[1], msg.data(), msg.size()) < 0) ::_exit(3);
    ::_exit(0);
  }
  ::close(pipefd[1]);
  std::string msg;
  char buf[4096];
  for (ssize_t n; (n = ::read(pipefd[0], buf, sizeof buf)) > 0;) msg.append(buf, size_t(n));
  ::close(pipefd[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  const size_t nl = msg.find('\n');
  ASSERT_NE(nl, std::string::npos) << msg;
  for (const std::string& m : {msg.substr(0, nl), msg.substr(nl + 1)}) {
    EXPECT_NE(m.find(p + ": write failed"), std::string::npos) << m;
    EXPECT_NE(m.find(std::strerror(EFBIG)), std::string::npos) << m;
  }
  EXPECT_EQ(olmo::read_file(p), old);
  EXPECT_EQ(names_in(d), std::vector<std::string>{"model.safetensors"});
  fs::remove_all(d);
}

// The rename itself fails (the final name is a non-empty directory): error names the file and
// the reason; the temporary is removed.
TEST(FileIo, FailedRenameNamesFileAndCleansUp) {
  fs::path d = tmpdir() / "rename";
  fs::create_directories(d / "taken" / "sub");
  const std::string p = (d / "taken").string();
  const std::string err = error_of([&] { olmo::write_file_atomic(p, "data"); });
  EXPECT_NE(err.find(p + ": rename from "), std::string::npos) << err;
  EXPECT_TRUE(err.find(std::strerror(EISDIR)) != std::string::npos ||
              err.find(std::strerror(ENOTEMPTY)) != std::string::npos)
      << err;
  EXPECT_EQ(names_in(d), std::vector<std::string>{"taken"});
  const std::string err2 = error_of([&] { olmo::write_file_atomic((d / "no" / "x").string(), "1"); });
  EXPECT_NE(err2.find((d / "no" / "x").string() + ": cannot create temporary file"), std::string::npos) << err2;
  EXPECT_NE(err2.find(std::strerror(ENOENT)), std::string::npos) << err2;
  fs::remove_all(d);
}

// Durability order: the data is fsynced before the rename, the directory after it.
TEST(FileIo, FsyncFileThenRenameThenFsyncDirectory) {
  fs::path d = fs::canonical(tmpdir()) / "order";
  fs::create_directories(d);
  const std::string p = (d / "metrics.json").string();
  g_log.clear();
  g_logging = true;
  olmo::write_file_atomic(p, "{}");
  g_logging = false;
  ASSERT_EQ(g_log.size(), 3u) << ::testing::PrintToString(g_log);
  EXPECT_EQ(g_log[0].rfind("fsync " + p + ".tmp.", 0), 0u) << g_log[0];
  EXPECT_EQ(g_log[1].rfind("rename " + p + ".tmp.", 0), 0u) << g_log[1];
  EXPECT_EQ(g_log[1].substr(g_log[1].size() - p.size() - 4), " -> " + p) << g_log[1];
  EXPECT_EQ(g_log[2], "fsync " + d.string()) << g_log[2];
  fs::remove_all(d);
}

// publish_dir: a staging directory replaces the final one whole; the old one is gone after,
// and the parent directory is fsynced after the rename.
TEST(FileIo, PublishDirReplacesWholeAndSyncsParent) {
  fs::path d = fs::canonical(tmpdir()) / "pub";
  fs::create_directories(d / "step5-tmp");
  fs::create_directories(d / "step5");
  olmo::write_file_atomic((d / "step5" / "a").string(), "old");
  olmo::write_file_atomic((d / "step5-tmp" / "b").string(), "new");
  g_log.clear();
  g_logging = true;
  olmo::publish_dir((d / "step5-tmp").string(), (d / "step5").string());
  g_logging = false;
  EXPECT_EQ(names_in(d), std::vector<std::string>{"step5"});
  EXPECT_EQ(names_in(d / "step5"), std::vector<std::string>{"b"});
  ASSERT_EQ(g_log.size(), 3u) << ::testing::PrintToString(g_log);
  EXPECT_EQ(g_log[1], "rename " + (d / "step5-tmp").string() + " -> " + (d / "step5").string());
  EXPECT_EQ(g_log[2], "fsync " + d.string());
  // A failing publish (no staging directory) names the target and leaves the old one in place.
  const std::string err =
      error_of([&] { olmo::publish_dir((d / "step6-tmp").string(), (d / "step5").string()); });
  EXPECT_NE(err.find((d / "step5").string() + ": cannot publish"), std::string::npos) << err;
  EXPECT_NE(err.find(std::strerror(ENOENT)), std::string::npos) << err;
  EXPECT_EQ(names_in(d / "step5"), std::vector<std::string>{"b"});
  EXPECT_EQ(names_in(d), std::vector<std::string>{"step5"});
  fs::remove_all(d);
}

TEST(FileIo, MappedFileSeesBytes) {
  fs::path d = tmpdir();
  std::string p = (d / "m.bin").string();
  olmo::write_file_atomic(p, std::string("hello\0world", 11));
  olmo::MappedFile m(p);
  ASSERT_EQ(m.size(), 11u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(m.data()), 11), std::string("hello\0world", 11));
  olmo::MappedFile moved = std::move(m);
  EXPECT_EQ(moved.size(), 11u);
  EXPECT_EQ(m.data(), nullptr);
  fs::remove_all(d);
}

TEST(Hash, StreamingEqualsOneShotAndDiffers) {
  std::string s(1000, 'x');
  olmo::Hasher h;
  h.update(s.data(), 400);
  h.update(s.data() + 400, 600);
  EXPECT_EQ(h.digest(), olmo::hash64(s.data(), s.size()));
  std::string t = s;
  t[500] = 'y';
  EXPECT_NE(olmo::hash64(t.data(), t.size()), olmo::hash64(s.data(), s.size()));
  EXPECT_EQ(olmo::hex64(0xabcULL), "0000000000000abc");
}
