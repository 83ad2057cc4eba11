// Python's random.Random(seed).shuffle(list) for an int seed, bit for bit (CPython 3.x):
// MT19937 seeded by init_by_array over the 32-bit words of |seed| (least significant first;
// [0] for seed 0), shuffle = for i from n-1 down to 1: j = _randbelow(i + 1), swap x[i], x[j],
// where _randbelow(m) draws getrandbits(m.bit_length()) (= genrand_uint32() >> (32 - k) for
// k <= 32) until the value is < m. OLMo-core permutes the source files this way
// (NumpyDatasetConfig.source_permutation_seed; long-context stage: 123). Cost O(n).
#pragma once
#include <cstdint>
#include <vector>

namespace olmo::data {

// The permutation order (order[i] = original index now at position i) of n items.
std::vector<int64_t> python_shuffle_order(int64_t n, uint64_t seed);

}  // namespace olmo::data
