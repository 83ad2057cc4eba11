// Flat element range -> rectangular checkpoint blocks (see flat_range.h).
#include "ckpt/flat_range.h"

#include "core/error.h"

namespace olmo::ckpt {

std::vector<FlatBlock> flat_range_blocks(const std::vector<int64_t>& shape, size_t a, size_t b) {
  size_t n = 1;
  for (int64_t d : shape) n *= size_t(d);
  OLMO_CHECK(a <= b && b <= n, "flat range [", a, ", ", b, ") outside a tensor of ", n,
             " elements");
  std::vector<FlatBlock> out;
  if (a == b) return out;
  auto add = [&](std::vector<int64_t> off, std::vector<int64_t> loc, size_t begin, size_t cnt) {
    out.push_back({std::move(off), std::move(loc), begin, cnt});
  };
  if (shape.size() == 1) {
    add({int64_t(a)}, {int64_t(b - a)}, a, b - a);
    return out;
  }
  OLMO_CHECK(shape.size() == 2, "flat range: tensors of rank ", shape.size(),
             " are not supported (1-D and 2-D only)");
  const size_t C = size_t(shape[1]);
  size_t ra = a / C, ca = a % C;
  const size_t rb = b / C, cb = b % C;
  if (ra == rb) {
    add({int64_t(ra), int64_t(ca)}, {1, int64_t(cb - ca)}, a, b - a);
    return out;
  }
  if (ca > 0) {
    add({int64_t(ra), int64_t(ca)}, {1, int64_t(C - ca)}, a, C - ca);
    ++ra;
  }
  if (rb > ra) add({int64_t(ra), 0}, {int64_t(rb - ra), int64_t(C)}, ra * C, (rb - ra) * C);
  if (cb > 0) add({int64_t(rb), 0}, {1, int64_t(cb)}, rb * C, cb);
  return out;
}

}  // namespace olmo::ckpt
