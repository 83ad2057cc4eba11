// Parameter units of an OLMo 3 model and the hooks Olmo3 calls around each unit's use (ZeRO-3
// gathers one unit's weights at a time; src/distributed/zero3_params.h).
// Units, in the flat layout's order (params.h), each a contiguous range [begin, end) of it:
//   0            the embedding [V,D]
//   1 .. L       block l = u - 1 (its 11 tensors)
//   L + 1        the head: final norm [D] and lm_head [V,D]
// Contract of a ParamProvider, per micro-batch (Olmo3::forward_backward):
//   forward:  acquire(0) .. release(0), then per block acquire(1+l) .. release(1+l), then
//             acquire(L+1) (kept through the loss and the final norm's backward);
//   backward: grad(L+1) (the LM head's gradient, written by the loss) .. grad_done(L+1),
//             release(L+1); per block from the last: acquire, grad, (recompute,) backward,
//             grad_done, release; then grad(0) .. grad_done(0) (the embedding's backward needs
//             no weights).
// At most one unit is acquired and one unit's gradient is open at a time. acquire(u) returns
// the unit's parameters (the element at flat offset begin), valid until release(u); grad(u)
// returns a buffer holding the unit's gradient so far (the model adds into it, beta = 1) and
// grad_done(u) says this micro-batch's contribution is complete. forward_loss and
// forward_logits make the forward calls only (and release the head at the end).
// The model does not know where parameters live (Olmo3's default keeps them in its own flat
// buffers and every hook is a pointer offset).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/params.h"

namespace olmo::model {

struct UnitRange {
  size_t begin = 0, end = 0;  // flat offsets
  size_t size() const { return end - begin; }
};

// The n_layers + 2 units of a layout, in order (they tile [0, total)).
std::vector<UnitRange> param_units(const ParamLayout& l);
// Unit indices (see above).
inline int64_t embed_unit() { return 0; }
inline int64_t block_unit(int64_t layer) { return 1 + layer; }
inline int64_t head_unit(int64_t n_layers) { return 1 + n_layers; }

class ParamProvider {
 public:
  virtual ~ParamProvider() = default;
  virtual const float* acquire(int64_t unit) = 0;
  virtual void release(int64_t unit) = 0;
  virtual float* grad(int64_t unit) = 0;
  virtual void grad_done(int64_t unit) = 0;
};

// A view of one unit's tensors: at(off) is the tensor at flat offset off (which must lie in
// the unit).
struct UnitView {
  const float* p = nullptr;
  size_t begin = 0;
  const float* at(size_t off) const { return p + (off - begin); }
};
struct UnitGrad {
  float* p = nullptr;
  size_t begin = 0;
  float* at(size_t off) const { return p + (off - begin); }
};

}  // namespace olmo::model
