// A range [a, b) of a row-major tensor's flat elements as checkpoint blocks (offset, local
// shape): the pieces a ZeRO shard of the flat parameter vector cuts out of each tensor.
//   1-D [n]:    one block.
//   2-D [R, C]: up to three: the partial first row, the full rows between, the partial last row.
// Writer and reader use the same decomposition; the reader's read_slice assembles any block
// from whatever pieces another world size wrote, which is what makes N -> M resharding work.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace olmo::ckpt {

struct FlatBlock {
  std::vector<int64_t> offset, local_shape;
  size_t flat_begin = 0;  // first element of the block, flat index within the tensor
  size_t numel = 0;
};

// Throws olmo::Error for tensors of rank > 2 or a range outside the tensor.
std::vector<FlatBlock> flat_range_blocks(const std::vector<int64_t>& shape, size_t a, size_t b);

}  // namespace olmo::ckpt
