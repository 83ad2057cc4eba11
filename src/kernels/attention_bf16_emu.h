// Internal: the bf16 attention kernels' exact emulation (attention_bf16_emu.cpp), run by
// attention_bf16.cpp's entry points where kernels::cpu_has_bf16() is false. Contract:
// attention_bf16.h (attention_forward_bf16 / attention_backward_bf16), the native kernels' bits.
#pragma once
#include <stdint.h>

#include "kernels/attention.h"

namespace olmo::kernels::attention_bf16_emu {

void forward(const AttnShape& s, const float* q, const float* k, const float* v,
             const int32_t* doc_ids, float* out, float* lse);
void backward(const AttnShape& s, const float* q, const float* k, const float* v,
              const int32_t* doc_ids, const float* out, const float* lse, const float* dout,
              float* dq, float* dk, float* dv);

}  // namespace olmo::kernels::attention_bf16_emu
