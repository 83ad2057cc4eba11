// numpy's random machinery, ported bit for bit, for OLMo-core's global data order:
//   numpy.random.Generator(numpy.random.PCG64(seed + epoch)).shuffle(numpy.arange(N, uint32)).
// Pieces (numpy/random/bit_generator.pyx, _pcg64.pyx, src/pcg64/pcg64.h,
// src/distributions/distributions.c, _generator.pyx):
//   SeedSequence   integer entropy -> 4-word pool (hashmix/mix) -> generate_state(4, uint64);
//   Pcg64          128-bit LCG, XSL-RR output, seeded by pcg "srandom" with (seed, inc) from the
//                  generated state; next32() hands out the low then the high half of one 64-bit
//                  output (numpy's has_uint32 / uinteger buffer);
//   random_interval masked rejection sampling of [0, max] (not Lemire);
//   shuffle        Fisher-Yates from the end, j = random_interval(i), as Generator.shuffle on a
//                  1-D array.
// Cost: shuffle is O(N) with ~1.4 32-bit draws per element on average; a 10^6 array takes ~10 ms.
#pragma once
#include <cstdint>
#include <vector>

namespace olmo::data {

using u128 = unsigned __int128;

// numpy.random.SeedSequence(entropy) without spawn keys. `entropy` holds the integer's
// little-endian 32-bit words (numpy's _coerce_to_uint32_array; the integer 0 is one word 0).
class SeedSequence {
 public:
  explicit SeedSequence(const std::vector<uint32_t>& entropy);
  // Integer entropy of up to 128 bits (seed + epoch can exceed 64 bits).
  static SeedSequence from_int(u128 value);
  // generate_state(n_words, uint32) / generate_state(n_words, uint64).
  std::vector<uint32_t> generate_state32(int n_words) const;
  std::vector<uint64_t> generate_state64(int n_words) const;
  const uint32_t* pool() const { return pool_; }

 private:
  uint32_t pool_[4];
};

// numpy.random.PCG64 bit generator (state + the 32-bit half buffer).
class Pcg64 {
 public:
  // PCG64(seed_sequence): state seeded from generate_state(4, uint64).
  explicit Pcg64(const SeedSequence& ss);
  // PCG64(int): the common case, PCG64(seed) with integer seed.
  static Pcg64 from_int(u128 seed) { return Pcg64(SeedSequence::from_int(seed)); }
  // pcg64_srandom_r(initstate, initseq).
  Pcg64(u128 initstate, u128 initseq);

  uint64_t next64();  // one step, XSL-RR output (numpy next_uint64 / random_raw)
  uint32_t next32();  // buffered halves (numpy next_uint32)
  u128 state() const { return state_; }
  u128 inc() const { return inc_; }

 private:
  void step();
  u128 state_ = 0, inc_ = 0;
  bool has_uint32_ = false;
  uint32_t uinteger_ = 0;
};

// numpy random_interval(bitgen, max): uniform in [0, max] by masked rejection.
uint64_t random_interval(Pcg64& rng, uint64_t max);

// Generator.shuffle(x) for a 1-D array (in place).
void shuffle(Pcg64& rng, uint32_t* x, int64_t n);

// OLMo-core's epoch order: arange(n, uint32) shuffled by PCG64(seed + epoch) (epoch 1-based),
// or left in order when shuffle is false. n must be < 2^32 - 1 (OLMo-core asserts the same).
std::vector<uint32_t> global_order(int64_t n, uint64_t seed, int64_t epoch, bool shuffle = true);

}  // namespace olmo::data
