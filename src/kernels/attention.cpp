// Attention entry points: validate the shape and dispatch to the tiled kernel of the active ISA
// (attention_tiled.h; this file also compiles its baseline, one-lane copy).
#include "kernels/attention.h"

#include "core/cpu.h"
#include "kernels/attention_isa.h"
#include "kernels/attention_mask.h"
#include "kernels/attention_tiled.h"

namespace olmo::kernels {
namespace attn_detail::scalar {
void forward(const AttnShape& s, const float* q, const float* k, const float* v,
             const int32_t* doc_ids, float* out, float* lse) {
  tiled_forward(s, q, k, v, doc_ids, out, lse);
}
void backward(const AttnShape& s, const float* q, const float* k, const float* v,
              const int32_t* doc_ids, const float* out, const float* lse, const float* dout,
              float* dq, float* dk, float* dv) {
  tiled_backward(s, q, k, v, doc_ids, out, lse, dout, dq, dk, dv);
}
}  // namespace attn_detail::scalar

void attention_forward(const AttnShape& s, const float* q, const float* k, const float* v,
                       const int32_t* doc_ids, float* out, float* lse) {
  check_attn_shape(s);
  switch (active_isa()) {
    case Isa::avx512: return attn_detail::avx512::forward(s, q, k, v, doc_ids, out, lse);
    case Isa::avx2: return attn_detail::avx2::forward(s, q, k, v, doc_ids, out, lse);
    default: return attn_detail::scalar::forward(s, q, k, v, doc_ids, out, lse);
  }
}

void attention_backward(const AttnShape& s, const float* q, const float* k, const float* v,
                        const int32_t* doc_ids, const float* out, const float* lse,
                        const float* dout, float* dq, float* dk, float* dv) {
  check_attn_shape(s);
  switch (active_isa()) {
    case Isa::avx512:
      return attn_detail::avx512::backward(s, q, k, v, doc_ids, out, lse, dout, dq, dk, dv);
    case Isa::avx2:
      return attn_detail::avx2::backward(s, q, k, v, doc_ids, out, lse, dout, dq, dk, dv);
    default:
      return attn_detail::scalar::backward(s, q, k, v, doc_ids, out, lse, dout, dq, dk, dv);
  }
}

}  // namespace olmo::kernels
