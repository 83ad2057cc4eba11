// XXH3-64 wrappers.
#include "core/hash.h"

#include <xxhash.h>

#include <cstdio>

namespace olmo {

uint64_t hash64(const void* data, size_t n, uint64_t seed) {
  return XXH3_64bits_withSeed(data, n, seed);
}

std::string hex64(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

Hasher::Hasher(uint64_t seed) : state_(XXH3_createState()) {
  XXH3_64bits_reset_withSeed(static_cast<XXH3_state_t*>(state_), seed);
}
Hasher::~Hasher() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }
void Hasher::update(const void* data, size_t n) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), data, n);
}
uint64_t Hasher::digest() const { return XXH3_64bits_digest(static_cast<XXH3_state_t*>(state_)); }

}  // namespace olmo
