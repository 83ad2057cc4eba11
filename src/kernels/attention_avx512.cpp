// Tiled attention forward/backward compiled for AVX512 (the code is attention_tiled.h).
#include "kernels/attention_isa.h"
#include "kernels/attention_tiled.h"

namespace olmo::kernels::attn_detail::avx512 {
void forward(const AttnShape& s, const float* q, const float* k, const float* v,
             const int32_t* doc_ids, float* out, float* lse) {
  tiled_forward(s, q, k, v, doc_ids, out, lse);
}
void backward(const AttnShape& s, const float* q, const float* k, const float* v,
              const int32_t* doc_ids, const float* out, const float* lse, const float* dout,
              float* dq, float* dk, float* dv) {
  tiled_backward(s, q, k, v, doc_ids, out, lse, dout, dq, dk, dv);
}
}  // namespace olmo::kernels::attn_detail::avx512
