// POSIX implementation of file_io.h.
#include "core/file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace olmo {

static std::string os_err() { return std::strerror(errno); }

std::string read_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  OLMO_CHECK(fd >= 0, path, ": cannot open: ", os_err());
  std::string out;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && st.st_size > 0) out.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::string e = os_err();
      ::close(fd);
      throw Error(cat(path, ": read failed: ", e));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

void write_all_fd(int fd, const std::string& path, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = ::write(fd, c, std::min<size_t>(n, size_t(1) << 30));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw Error(cat(path, ": write failed: ", std::strerror(w < 0 ? errno : EIO)));
    c += w;
    n -= static_cast<size_t>(w);
  }
}

void fsync_dir(const std::string& dir) {
  const std::string d = dir.empty() ? "." : dir;
  const int fd = ::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  OLMO_CHECK(fd >= 0, d, ": cannot open directory for fsync: ", os_err());
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  OLMO_CHECK(rc == 0 || err == EINVAL, d, ": fsync failed: ", std::strerror(err));
}

static std::string parent_of(const std::string& path) {
  return std::filesystem::path(path).parent_path().string();
}

// ---- AtomicFile ------------------------------------------------------------------------------

static constexpr size_t kAtomicBuf = size_t(1) << 16;

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  static std::atomic<uint64_t> counter{0};
  tmp_ = cat(path_, ".tmp.", ::getpid(), ".", counter++);
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  OLMO_CHECK(fd_ >= 0, path_, ": cannot create temporary file ", tmp_, ": ", os_err());
  buf_.reserve(kAtomicBuf);
}

AtomicFile::~AtomicFile() {
  if (committed_) return;
  if (fd_ >= 0) ::close(fd_);
  ::unlink(tmp_.c_str());
}

void AtomicFile::flush() {
  if (buf_.empty()) return;
  write_all_fd(fd_, path_, buf_.data(), buf_.size());
  buf_.clear();
}

void AtomicFile::write(const void* p, size_t n) {
  OLMO_CHECK(!committed_ && fd_ >= 0, path_, ": write after commit");
  written_ += n;
  if (buf_.size() + n <= kAtomicBuf) {
    buf_.append(static_cast<const char*>(p), n);
    return;
  }
  flush();
  if (n >= kAtomicBuf) write_all_fd(fd_, path_, p, n);
  else buf_.append(static_cast<const char*>(p), n);
}

void AtomicFile::commit() {
  OLMO_CHECK(!committed_ && fd_ >= 0, path_, ": committed twice");
  flush();
  if (::fsync(fd_) != 0) throw Error(cat(path_, ": fsync failed: ", os_err()));
  const int rc = ::close(fd_);
  fd_ = -1;
  OLMO_CHECK(rc == 0, path_, ": close failed: ", os_err());
  OLMO_CHECK(::rename(tmp_.c_str(), path_.c_str()) == 0, path_, ": rename from ", tmp_,
             " failed: ", os_err());
  committed_ = true;  // the temporary is gone: nothing for the destructor to remove
  fsync_dir(parent_of(path_));
}

void write_file_atomic(const std::string& path, std::string_view data) {
  AtomicFile f(path);
  f.write(data);
  f.commit();
}

// ---- directories -----------------------------------------------------------------------------

void publish_dir(const std::string& tmp_dir, const std::string& final_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string old;
  if (fs::exists(final_dir, ec)) {
    old = final_dir + "-old-tmp";
    fs::remove_all(old, ec);
    OLMO_CHECK(::rename(final_dir.c_str(), old.c_str()) == 0, final_dir,
               ": cannot move the previous version aside: ", os_err());
  }
  if (::rename(tmp_dir.c_str(), final_dir.c_str()) != 0) {
    const std::string e = os_err();
    if (!old.empty()) ::rename(old.c_str(), final_dir.c_str());
    throw Error(cat(final_dir, ": cannot publish ", tmp_dir, ": rename failed: ", e));
  }
  fsync_dir(parent_of(final_dir));
  if (!old.empty()) fs::remove_all(old, ec);
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

uint64_t file_size(const std::string& path) {
  struct stat st {};
  OLMO_CHECK(::stat(path.c_str(), &st) == 0, path, ": cannot stat: ", os_err());
  return static_cast<uint64_t>(st.st_size);
}

MappedFile::MappedFile(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  OLMO_CHECK(fd >= 0, path, ": cannot open: ", os_err());
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    std::string e = os_err();
    ::close(fd);
    throw Error(cat(path, ": cannot stat: ", e));
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      std::string e = os_err();
      ::close(fd);
      throw Error(cat(path, ": mmap failed: ", e));
    }
    data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

MappedFile::MappedFile(MappedFile&& o) noexcept
    : path_(std::move(o.path_)), data_(o.data_), size_(o.size_) {
  o.data_ = nullptr;
  o.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
    path_ = std::move(o.path_);
    data_ = o.data_;
    size_ = o.size_;
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

}  // namespace olmo
