// File helpers shared by every module: whole-file reads, atomic writes, read-only mmap.
// Contract: errors throw olmo::Error naming the path and the OS reason. write_file_atomic never
// leaves a partial file under the final name (write to a temp name in the same directory,
// fsync, rename, fsync the directory).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace olmo {

std::string read_file(const std::string& path);
void write_file_atomic(const std::string& path, std::string_view data);
bool file_exists(const std::string& path);
uint64_t file_size(const std::string& path);
void fsync_dir(const std::string& dir);   // make a rename durable

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
