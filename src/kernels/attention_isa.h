// Internal: the tiled attention kernels, one copy per ISA (attention.cpp = baseline,
// attention_avx2.cpp, attention_avx512.cpp), all built from attention_tiled.h. The public
// entry points in attention.cpp validate the shape and pick one with olmo::active_isa().
#pragma once
#include <cstdint>

#include "kernels/attention.h"

#define OLMO_ATTN_TILED_DECLS                                                                 \
  void forward(const AttnShape& s, const float* q, const float* k, const float* v,            \
               const int32_t* doc_ids, float* out, float* lse);                               \
  void backward(const AttnShape& s, const float* q, const float* k, const float* v,           \
                const int32_t* doc_ids, const float* out, const float* lse, const float* dout, \
                float* dq, float* dk, float* dv);

namespace olmo::kernels::attn_detail {
namespace scalar { OLMO_ATTN_TILED_DECLS }
namespace avx2 { OLMO_ATTN_TILED_DECLS }
namespace avx512 { OLMO_ATTN_TILED_DECLS }
}  // namespace olmo::kernels::attn_detail
