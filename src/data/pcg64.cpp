// numpy SeedSequence / PCG64 / random_interval / Generator.shuffle, bit-exact (see pcg64.h).
#include "data/pcg64.h"

#include "core/error.h"

namespace olmo::data {

namespace {
// numpy/random/bit_generator.pyx constants (32-bit words, XSHIFT = 4 * 8 / 2).
constexpr uint32_t kInitA = 0x43b0d7e5u, kMultA = 0x931e8875u;
constexpr uint32_t kInitB = 0x8b51f9ddu, kMultB = 0x58f38dedu;
constexpr uint32_t kMixMultL = 0xca01f9ddu, kMixMultR = 0x4973f715u;
constexpr int kXShift = 16;
constexpr int kPoolSize = 4;

uint32_t hashmix(uint32_t value, uint32_t& hash_const) {
  value ^= hash_const;
  hash_const *= kMultA;
  value *= hash_const;
  value ^= value >> kXShift;
  return value;
}

uint32_t mix(uint32_t x, uint32_t y) {
  uint32_t r = kMixMultL * x - kMixMultR * y;
  r ^= r >> kXShift;
  return r;
}

// PCG_DEFAULT_MULTIPLIER_128 = 2549297995355413924 * 2^64 + 4865540595714422341.
constexpr u128 kMult = (u128(2549297995355413924ULL) << 64) | u128(4865540595714422341ULL);
}  // namespace

SeedSequence::SeedSequence(const std::vector<uint32_t>& entropy) {
  uint32_t hash_const = kInitA;
  const size_t n = entropy.size();
  for (int i = 0; i < kPoolSize; ++i)
    pool_[i] = hashmix(i < static_cast<int>(n) ? entropy[i] : 0u, hash_const);
  for (int s = 0; s < kPoolSize; ++s)
    for (int d = 0; d < kPoolSize; ++d)
      if (s != d) pool_[d] = mix(pool_[d], hashmix(pool_[s], hash_const));
  for (size_t s = kPoolSize; s < n; ++s)
    for (int d = 0; d < kPoolSize; ++d) pool_[d] = mix(pool_[d], hashmix(entropy[s], hash_const));
}

SeedSequence SeedSequence::from_int(u128 value) {
  std::vector<uint32_t> words;
  do {  // little-endian 32-bit words; 0 -> [0]
    words.push_back(static_cast<uint32_t>(value));
    value >>= 32;
  } while (value != 0);
  return SeedSequence(words);
}

std::vector<uint32_t> SeedSequence::generate_state32(int n_words) const {
  std::vector<uint32_t> out(static_cast<size_t>(n_words));
  uint32_t hash_const = kInitB;
  for (int i = 0; i < n_words; ++i) {
    uint32_t v = pool_[i % kPoolSize];
    v ^= hash_const;
    hash_const *= kMultB;
    v *= hash_const;
    v ^= v >> kXShift;
    out[i] = v;
  }
  return out;
}

std::vector<uint64_t> SeedSequence::generate_state64(int n_words) const {
  std::vector<uint32_t> w = generate_state32(2 * n_words);
  std::vector<uint64_t> out(static_cast<size_t>(n_words));
  for (int i = 0; i < n_words; ++i) out[i] = uint64_t(w[2 * i]) | (uint64_t(w[2 * i + 1]) << 32);
  return out;
}

Pcg64::Pcg64(u128 initstate, u128 initseq) {
  state_ = 0;
  inc_ = (initseq << 1) | 1;
  step();
  state_ += initstate;
  step();
}

Pcg64::Pcg64(const SeedSequence& ss) {
  std::vector<uint64_t> v = ss.generate_state64(4);
  *this = Pcg64((u128(v[0]) << 64) | v[1], (u128(v[2]) << 64) | v[3]);
}

void Pcg64::step() { state_ = state_ * kMult + inc_; }

uint64_t Pcg64::next64() {
  step();
  uint64_t x = static_cast<uint64_t>(state_ >> 64) ^ static_cast<uint64_t>(state_);
  unsigned rot = static_cast<unsigned>(state_ >> 122);
  return (x >> rot) | (x << ((64 - rot) & 63));
}

uint32_t Pcg64::next32() {
  if (has_uint32_) {
    has_uint32_ = false;
    return uinteger_;
  }
  uint64_t v = next64();
  has_uint32_ = true;
  uinteger_ = static_cast<uint32_t>(v >> 32);
  return static_cast<uint32_t>(v);
}

uint64_t random_interval(Pcg64& rng, uint64_t max) {
  if (max == 0) return 0;
  uint64_t mask = max;
  mask |= mask >> 1;
  mask |= mask >> 2;
  mask |= mask >> 4;
  mask |= mask >> 8;
  mask |= mask >> 16;
  mask |= mask >> 32;
  uint64_t v;
  if (max <= 0xffffffffULL) {
    while ((v = (rng.next32() & mask)) > max) {
    }
  } else {
    while ((v = (rng.next64() & mask)) > max) {
    }
  }
  return v;
}

void shuffle(Pcg64& rng, uint32_t* x, int64_t n) {
  for (int64_t i = n - 1; i >= 1; --i) {
    uint64_t j = random_interval(rng, static_cast<uint64_t>(i));
    uint32_t t = x[j];
    x[j] = x[i];
    x[i] = t;
  }
}

std::vector<uint32_t> global_order(int64_t n, uint64_t seed, int64_t epoch, bool do_shuffle) {
  OLMO_CHECK(n >= 0 && n < int64_t(0xffffffffLL), "global order: dataset size ", n,
             " must be in [0, 2^32 - 1)");
  OLMO_CHECK(epoch >= 1, "global order: epoch must be >= 1 (1-based), got ", epoch);
  std::vector<uint32_t> idx(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) idx[i] = static_cast<uint32_t>(i);
  if (do_shuffle) {
    Pcg64 rng = Pcg64::from_int(u128(seed) + u128(static_cast<uint64_t>(epoch)));
    shuffle(rng, idx.data(), n);
  }
  return idx;
}

}  // namespace olmo::data
