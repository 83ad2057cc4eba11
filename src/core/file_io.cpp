// POSIX implementation of file_io.h.
#include "core/file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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

void fsync_dir(const std::string& dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

void write_file_atomic(const std::string& path, std::string_view data) {
  namespace fs = std::filesystem;
  std::string tmp = cat(path, ".tmp.", ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  OLMO_CHECK(fd >= 0, path, ": cannot create temporary file ", tmp, ": ", os_err());
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string e = os_err();
      ::close(fd);
      ::unlink(tmp.c_str());
      throw Error(cat(path, ": write failed: ", e));
    }
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    std::string e = os_err();
    ::unlink(tmp.c_str());
    throw Error(cat(path, ": fsync/close failed: ", e));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string e = os_err();
    ::unlink(tmp.c_str());
    throw Error(cat(path, ": rename failed: ", e));
  }
  fsync_dir(fs::path(path).parent_path().string());
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
