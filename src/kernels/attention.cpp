// Attention entry points: validate the shape, open the profiler scope and dispatch to the tiled
// kernels of the active ISA (attention_body.h; its scalar copy is compiled here).
#include "kernels/attention.h"

#include "core/profile.h"
#include "kernels/attention_body.h"
#include "kernels/attention_mask.h"
#include "kernels/dispatch.h"

namespace olmo::kernels {
void attention_forward(const AttnShape& s, const float* q, const float* k, const float* v,
                       const int32_t* doc_ids, float* out, float* lse) {
  check_attn_shape(s);
  OLMO_PROFILE("attention_fwd", attention_flops(s));
  OLMO_DISPATCH(attention_fwd_tiled)(s, q, k, v, doc_ids, out, lse);
}

void attention_backward(const AttnShape& s, const float* q, const float* k, const float* v,
                        const int32_t* doc_ids, const float* out, const float* lse,
                        const float* dout, float* dq, float* dk, float* dv) {
  check_attn_shape(s);
  OLMO_PROFILE("attention_bwd", 2.0 * attention_flops(s));
  OLMO_DISPATCH(attention_bwd_tiled)(s, q, k, v, doc_ids, out, lse, dout, dq, dk, dv);
}

}  // namespace olmo::kernels
