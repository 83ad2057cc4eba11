// CPython random.Random seeding and shuffle (see py_random.h).
#include "data/py_random.h"

#include <numeric>

#include "core/error.h"

namespace olmo::data {

namespace {
class Mt19937 {
 public:
  explicit Mt19937(const std::vector<uint32_t>& key) {
    init(19650218u);
    size_t i = 1, j = 0;
    const size_t n = key.size();
    for (size_t k = std::max<size_t>(kN, n); k > 0; --k) {
      mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1664525u)) + key[j] + uint32_t(j);
      ++i, ++j;
      if (i >= kN) mt_[0] = mt_[kN - 1], i = 1;
      if (j >= n) j = 0;
    }
    for (size_t k = kN - 1; k > 0; --k) {
      mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1566083941u)) - uint32_t(i);
      ++i;
      if (i >= kN) mt_[0] = mt_[kN - 1], i = 1;
    }
    mt_[0] = 0x80000000u;
  }
  uint32_t next() {
    if (idx_ >= kN) twist();
    uint32_t y = mt_[idx_++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
  }

 private:
  static constexpr size_t kN = 624, kM = 397;
  void init(uint32_t s) {
    mt_[0] = s;
    for (size_t i = 1; i < kN; ++i)
      mt_[i] = 1812433253u * (mt_[i - 1] ^ (mt_[i - 1] >> 30)) + uint32_t(i);
    idx_ = kN;
  }
  void twist() {
    for (size_t k = 0; k < kN; ++k) {
      uint32_t y = (mt_[k] & 0x80000000u) | (mt_[(k + 1) % kN] & 0x7fffffffu);
      mt_[k] = mt_[(k + kM) % kN] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
    }
    idx_ = 0;
  }
  uint32_t mt_[kN];
  size_t idx_ = kN;
};
}  // namespace

std::vector<int64_t> python_shuffle_order(int64_t n, uint64_t seed) {
  OLMO_CHECK(n >= 0 && n < (int64_t(1) << 32), "python_shuffle_order: n ", n, " out of range");
  std::vector<uint32_t> key;
  for (uint64_t s = seed; s != 0; s >>= 32) key.push_back(uint32_t(s & 0xffffffffu));
  if (key.empty()) key.push_back(0);
  Mt19937 mt(key);
  std::vector<int64_t> x(static_cast<size_t>(n));
  std::iota(x.begin(), x.end(), int64_t(0));
  for (int64_t i = n - 1; i >= 1; --i) {
    const uint64_t m = uint64_t(i) + 1;
    int k = 0;
    while ((uint64_t(1) << k) <= m) ++k;  // m.bit_length()
    uint64_t r;
    do r = mt.next() >> (32 - k);
    while (r >= m);
    std::swap(x[size_t(i)], x[size_t(r)]);
  }
  return x;
}

}  // namespace olmo::data
