// bf16 attention entry points (contract in attention_bf16.h): validate the shape, open the
// profiler scope and run the AVX512_BF16 kernels (attention_bf16_avx512bf16.cpp) where
// cpu_has_bf16(), else the fp32 kernels of attention.h.
#include "kernels/attention_bf16.h"

#include "core/profile.h"
#include "kernels/attention_mask.h"
#include "kernels/bf16.h"

namespace olmo::kernels {

namespace isa_avx512bf16 {
void attention_fwd_bf16(const AttnShape& s, const float* q, const float* k, const float* v,
                        const int32_t* doc_ids, float* out, float* lse);
void attention_bwd_bf16(const AttnShape& s, const float* q, const float* k, const float* v,
                        const int32_t* doc_ids, const float* out, const float* lse,
                        const float* dout, float* dq, float* dk, float* dv);
}  // namespace isa_avx512bf16

bool attention_bf16_native() { return cpu_has_bf16(); }

void attention_forward_bf16(const AttnShape& s, const float* q, const float* k, const float* v,
                            const int32_t* doc_ids, float* out, float* lse) {
  if (!attention_bf16_native()) return attention_forward(s, q, k, v, doc_ids, out, lse);
  check_attn_shape(s);
  OLMO_PROFILE("attention_bf16_fwd", attention_flops(s));
  isa_avx512bf16::attention_fwd_bf16(s, q, k, v, doc_ids, out, lse);
}

void attention_backward_bf16(const AttnShape& s, const float* q, const float* k, const float* v,
                             const int32_t* doc_ids, const float* out, const float* lse,
                             const float* dout, float* dq, float* dk, float* dv) {
  if (!attention_bf16_native())
    return attention_backward(s, q, k, v, doc_ids, out, lse, dout, dq, dk, dv);
  check_attn_shape(s);
  OLMO_PROFILE("attention_bf16_bwd", 2.0 * attention_flops(s));
  isa_avx512bf16::attention_bwd_bf16(s, q, k, v, doc_ids, out, lse, dout, dq, dk, dv);
}

}  // namespace olmo::kernels
