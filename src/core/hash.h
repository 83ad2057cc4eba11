// Content hashing (XXH3-64 from Debian's libxxhash): checkpoint checksums, batch content hashes,
// dataset fingerprints. Not cryptographic; collision-resistant enough to detect corruption and
// repeated data. hex64 formats a hash as 16 lowercase hex digits.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace olmo {

uint64_t hash64(const void* data, size_t n, uint64_t seed = 0);
std::string hex64(uint64_t h);

// Streaming form for data that arrives in pieces.
class Hasher {
 public:
  explicit Hasher(uint64_t seed = 0);
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;
  void update(const void* data, size_t n);
  uint64_t digest() const;

 private:
  void* state_;
};

}  // namespace olmo
