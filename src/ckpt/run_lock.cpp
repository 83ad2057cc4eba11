// RunDirLock (see run_lock.h): flock on RUN_DIR/.lock, pid recorded for the error message.
#include "ckpt/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include "core/error.h"

namespace olmo::ckpt {

RunDirLock::RunDirLock(const std::string& run_dir, const std::string& name) : run_dir_(run_dir) {
  std::error_code ec;
  std::filesystem::create_directories(run_dir, ec);
  OLMO_CHECK(!ec && std::filesystem::is_directory(run_dir), "run dir ", run_dir,
             ": cannot create directory: ", ec ? ec.message() : "exists and is not a directory");
  const std::string path = run_dir + "/" + name;
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  OLMO_CHECK(fd_ >= 0, path, ": cannot open lock file: ", std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    std::string holder;
    char buf[64] = {0};
    ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
    if (n > 0) holder.assign(buf, static_cast<size_t>(n));
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK)
      throw Error(cat("run dir ", run_dir, " is locked by pid ", holder.empty() ? "?" : holder,
                      " (another olmo process is using it; stop it or choose another run dir)"));
    throw Error(cat(path, ": flock failed: ", std::strerror(err)));
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    const std::string e = std::strerror(errno);
    ::close(fd_);
    fd_ = -1;
    throw Error(cat(path, ": cannot write pid: ", e));
  }
}

RunDirLock::~RunDirLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

}  // namespace olmo::ckpt
