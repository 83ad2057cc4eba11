// Layout-independent tensor and JSON fingerprints (see fingerprint.h).
#include "ckpt/fingerprint.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "ckpt/checkpoint.h"
#include "ckpt/fingerprint_body.h"
#include "core/error.h"
#include "core/hash.h"
#include "kernels/dispatch.h"

namespace olmo::ckpt {

namespace {

constexpr size_t kL = 1024;

constexpr uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

struct Coefficients {
  alignas(64) std::array<uint32_t, kL> b{};
  Coefficients() {
    for (size_t j = 0; j < kL; ++j) b[j] = uint32_t(splitmix64(j + 0x5151515151ull)) | 1u;
  }
};

const Coefficients& coef() {
  static const Coefficients c;
  return c;
}

inline uint64_t chunk_coef(uint64_t k) { return splitmix64(k ^ 0xC3A5C85C97CB3127ull) | 1; }

inline uint32_t word(const void* data, size_t i) {
  uint32_t w;
  std::memcpy(&w, static_cast<const char*>(data) + 4 * i, 4);
  return w;
}

}  // namespace

uint64_t fingerprint_partial_reference(const void* data, size_t n, size_t begin) {
  const Coefficients& c = coef();
  uint64_t f = 0;
  for (size_t i = 0; i < n; ++i) {
    const size_t g = begin + i;
    const uint64_t term = uint32_t(word(data, i) * c.b[g % kL]);
    f += term * chunk_coef(g / kL);
  }
  return f;
}

uint64_t fingerprint_partial(const void* data, size_t n, size_t begin, bool threads) {
  if (n == 0) return 0;
  const Coefficients& c = coef();
  const uint32_t* w = static_cast<const uint32_t*>(data);  // 4-byte aligned in every caller
  auto inner = OLMO_DISPATCH(fp_inner);
  // Split [begin, begin+n) at multiples of L: a head piece, whole chunks, a tail piece.
  const size_t first_chunk = begin / kL, last_chunk = (begin + n - 1) / kL;
  uint64_t f = 0;
#pragma omp parallel for schedule(static) reduction(+ : f) if (threads && n >= (size_t(1) << 18))
  for (size_t k = first_chunk; k <= last_chunk; ++k) {
    const size_t lo = std::max(begin, k * kL), hi = std::min(begin + n, (k + 1) * kL);
    f += inner(w + (lo - begin), c.b.data() + lo % kL, int64_t(hi - lo)) * chunk_coef(k);
  }
  return f;
}

uint64_t fingerprint_json(const nlohmann::json& j) {
  const std::string s = j.dump();
  return hash64(s.data(), s.size());
}

std::map<std::string, uint64_t> checkpoint_tensor_fingerprints(const CheckpointReader& r) {
  std::map<std::string, uint64_t> fp;
  std::map<std::string, int64_t> covered;
  std::vector<uint32_t> buf;
  for (const TensorEntry& t : r.tensors()) {
    if (dtype_size(t.dtype) != 4) continue;
    int64_t n = 1;
    for (int64_t d : t.local_shape) n *= d;
    buf.resize(size_t(n));
    if (n > 0) r.read_slice(t.name, t.dtype, buf.data(), t.offset, t.local_shape);
    covered[t.name] += n;
    uint64_t& f = fp[t.name];
    // Row-major runs of the block along the last dimension, each contiguous in the tensor.
    const size_t rank = t.global_shape.size();
    if (rank == 0 || n == 0) {
      if (n > 0) f += fingerprint_partial(buf.data(), 1, 0);
      continue;
    }
    const int64_t run = t.local_shape[rank - 1];
    std::vector<int64_t> idx(rank, 0);  // index inside the block (last dim stays 0)
    for (int64_t done = 0; done < n; done += run) {
      int64_t g = 0;
      for (size_t d = 0; d < rank; ++d) g = g * t.global_shape[d] + t.offset[d] + idx[d];
      f += fingerprint_partial(buf.data() + done, size_t(run), size_t(g));
      for (size_t d = rank - 1; d-- > 0;) {
        if (++idx[d] < t.local_shape[d]) break;
        idx[d] = 0;
      }
    }
  }
  for (const auto& [name, n] : covered) {
    int64_t want = 1;
    for (int64_t d : r.shape(name)) want *= d;
    OLMO_CHECK(n == want, "checkpoint ", r.dir(), ": tensor '", name, "': its pieces hold ", n,
               " elements but the tensor has ", want, " (a shard missing from index.json?)");
  }
  return fp;
}

}  // namespace olmo::ckpt
