// File helpers shared by every module: whole-file reads, THE atomic write (one way to publish a
// user-visible file), read-only mmap.
// Contract: errors throw olmo::Error naming the final path and the OS reason (strerror).
// Atomic publication (write_file_atomic, AtomicFile, publish_dir): the bytes go to a temporary
// name in the same directory, are fsynced, renamed onto the final name, and the directory is
// fsynced. A reader (or a power loss) sees the previous file or the whole new one, never a
// part; a failure removes the temporary and leaves the previous file in place.
// Nothing outside src/core renames a user-visible output (tests/core/no_hand_rolled_rename.py).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace olmo {

std::string read_file(const std::string& path);
bool file_exists(const std::string& path);
uint64_t file_size(const std::string& path);

// Whole-buffer form: AtomicFile f(path); f.write(data); f.commit().
void write_file_atomic(const std::string& path, std::string_view data);

// Streaming form, for a file written in pieces (shards, token files, logits). Writes are
// buffered (64 KiB; larger pieces go straight to the file). commit() flushes, fsyncs, renames
// onto path() and fsyncs the directory; after it the object is spent. Destroyed uncommitted (an
// exception, an early return) it closes and removes the temporary: path() is untouched.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);  // creates <path>.tmp.<pid>.<n>; throws naming path
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* p, size_t n);
  void write(std::string_view s) { write(s.data(), s.size()); }
  void commit();
  const std::string& path() const { return path_; }
  // The temporary; a child process may fill it instead of write() (olmo plot's matplotlib):
  // commit() then fsyncs the same inode through this object's descriptor.
  const std::string& temp_path() const { return tmp_; }
  uint64_t bytes_written() const { return written_; }

 private:
  void flush();
  std::string path_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
  uint64_t written_ = 0;
  std::string buf_;
};

// Publishes a fully written (and fsynced) staging directory: renames tmp_dir onto final_dir and
// fsyncs their parent. An existing final_dir is first moved aside to final_dir + "-old-tmp" and
// deleted only once the new one is in place (a failed rename moves it back). tmp_dir and
// final_dir must share a parent directory.
void publish_dir(const std::string& tmp_dir, const std::string& final_dir);

// write(2) all of [p, p+n) to fd, retrying EINTR and short writes; throws naming path.
void write_all_fd(int fd, const std::string& path, const void* p, size_t n);
// fsync a directory (makes a create/rename/unlink in it durable); throws naming dir. A file
// system that cannot sync directories (EINVAL) is accepted silently.
void fsync_dir(const std::string& dir);

// Read-only memory map of a whole file (empty files map to size 0, data nullptr).
class MappedFile {
 public:
  MappedFile() = default;
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace olmo
