// SHA-256 (FIPS 180-4), used to verify downloaded tokenizer rank files. Small and portable;
// throughput ~200-400 MB/s, enough for a 1.7 MB rank file.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace olmo {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t n);
  // 32-byte digest as 64 lowercase hex digits; the object must not be updated afterwards.
  std::string hex_digest();

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

std::string sha256_hex(std::string_view data);
std::string sha256_file_hex(const std::string& path);  // throws olmo::Error naming the path

}  // namespace olmo
