// SHA-256 digests (FIPS 180-4) through OpenSSL's libcrypto (EVP interface): used to verify
// tokenizer rank files and corpus packages, and for OLMo-core's dataset fingerprint. libcrypto
// is Debian's libssl-dev, audited and SIMD-accelerated (SHA-NI / AVX2, ~1-2 GB/s here).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace olmo {

// Streaming digest. Not copyable (owns an EVP_MD_CTX).
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, size_t n);
  // 32-byte digest as 64 lowercase hex digits; the object must not be updated afterwards.
  std::string hex_digest();

 private:
  void* ctx_;  // EVP_MD_CTX*, kept opaque so includers need no OpenSSL headers
};

std::string sha256_hex(std::string_view data);
// Streams the file in 1 MiB pieces; throws olmo::Error naming the path when it cannot be read.
std::string sha256_file_hex(const std::string& path);

}  // namespace olmo
