// Corpus inputs: Debian packages fetched with `apt-get download` (no install), described with
// `dpkg-deb -f`, unpacked with `dpkg-deb -x`. Subprocesses are run without a shell (fork/execvp).
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/file_io.h"
#include "corpus/corpus.h"
#include "core/sha256.h"

namespace olmo::corpus {
namespace fs = std::filesystem;

int run_command(const std::vector<std::string>& argv, const std::string& cwd, std::string* output) {
  OLMO_CHECK(!argv.empty(), "run_command: empty argv");
  int pipefd[2];
  OLMO_CHECK(::pipe(pipefd) == 0, "pipe failed: ", std::strerror(errno));
  pid_t pid = ::fork();
  OLMO_CHECK(pid >= 0, "fork failed: ", std::strerror(errno));
  if (pid == 0) {
    ::dup2(pipefd[1], 1);
    ::dup2(pipefd[1], 2);
    ::close(pipefd[0]);
    ::close(pipefd[1]);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) _exit(126);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  ::close(pipefd[1]);
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(pipefd[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, size_t(n));
  }
  ::close(pipefd[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (output) *output = std::move(out);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static std::string tail(const std::string& s, size_t n = 1500) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}

static std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

// .debs in dir whose package name (text before the first '_') is `name`, sorted.
static std::vector<std::string> debs_of(const std::string& dir, const std::string& name) {
  std::vector<std::string> out;
  for (auto& e : fs::directory_iterator(dir)) {
    std::string f = e.path().filename().string();
    if (e.is_regular_file() && f.size() > 4 && f.ends_with(".deb") &&
        f.compare(0, name.size() + 1, name + "_") == 0)
      out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

static std::string field(const std::string& deb, const std::string& key) {
  std::string out;
  int rc = run_command({"dpkg-deb", "-f", deb, key}, "", &out);
  OLMO_CHECK(rc == 0, deb, ": dpkg-deb -f ", key, " failed (exit ", rc, "): ", tail(out));
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

std::vector<PackageInfo> fetch_packages(const std::vector<std::string>& names,
                                        const std::string& deb_dir) {
  fs::create_directories(deb_dir);
  std::vector<std::string> missing;
  for (auto& n : names) {
    auto have = debs_of(deb_dir, n);
    if (have.size() != 1) {  // none, or several versions: fetch the current candidate afresh
      for (auto& h : have) fs::remove(h);
      missing.push_back(n);
    }
  }
  if (!missing.empty()) {
    std::vector<std::string> argv = {"apt-get", "download", "-q"};
    argv.insert(argv.end(), missing.begin(), missing.end());
    std::fprintf(stderr, "[corpus] apt-get download %s\n", join(missing).c_str());
    std::string out;
    int rc = run_command(argv, deb_dir, &out);
    if (rc != 0) {  // stale package lists are the usual cause: update once and retry
      std::fprintf(stderr, "[corpus] apt-get download failed (exit %d); running apt-get update\n", rc);
      std::string up;
      int urc = run_command({"apt-get", "update", "-q"}, deb_dir, &up);
      rc = run_command(argv, deb_dir, &out);
      OLMO_CHECK(rc == 0, "apt-get download ", join(missing), " failed in ", deb_dir, " (exit ",
                 rc, "; apt-get update exit ", urc, "): ", tail(out));
    }
  }
  std::vector<PackageInfo> infos;
  for (auto& n : names) {
    auto have = debs_of(deb_dir, n);
    OLMO_CHECK(have.size() == 1, deb_dir, ": expected one .deb of ", n, " after download, found ",
               have.size());
    PackageInfo p;
    p.deb = have[0];
    p.name = field(p.deb, "Package");
    p.version = field(p.deb, "Version");
    p.architecture = field(p.deb, "Architecture");
    OLMO_CHECK(p.name == n, p.deb, ": package field is '", p.name, "', expected '", n, "'");
    p.sha256 = sha256_file_hex(p.deb);
    p.size = file_size(p.deb);
    infos.push_back(p);
  }
  return infos;
}

void unpack_deb(const std::string& deb, const std::string& dest) {
  fs::remove_all(dest);
  fs::create_directories(dest);
  std::string out;
  int rc = run_command({"dpkg-deb", "-x", deb, dest}, "", &out);
  OLMO_CHECK(rc == 0, deb, ": dpkg-deb -x failed (exit ", rc, "): ", tail(out));
}

}  // namespace olmo::corpus
