// The fused, chunked LM head + cross-entropy + z-loss of loss.h with bf16 matmul inputs (the
// bf16_mixed precision): per chunk of valid rows, x_c -> bf16, logits = x_c W^T (gemm_bf16,
// fp32 out), the row-wise log-sum-exp, loss sums and d/dlogits in fp32 (the same row kernels as
// lm_head_loss), d/dlogits -> bf16 (in the row loop, while the row is in cache), then
// dx_c = dlogits W and dW += dlogits^T x_c (gemm_bf16, fp32 out, beta = 1 into the fp32 dW).
// As PyTorch autocast runs F.linear in bf16 and the loss in fp32 (its logits are additionally
// rounded to bf16 before the upcast; ours stay fp32 from the GEMM).
//
// W is the bf16 copy of lm_head [V, D]; x, dx, dW are fp32. Same contract, loss definition and
// errors as lm_head_loss (loss.h). Extra memory: chunk_rows * (V + D) bf16.
#pragma once
#include <cstdint>

#include "kernels/bf16.h"
#include "kernels/loss.h"

namespace olmo::kernels {

LossSums lm_head_loss_bf16(const float* x, const bf16_t* W, const int32_t* targets, int64_t N,
                           int64_t D, int64_t V, float z_coef, float grad_scale, float* dx,
                           float* dW, int64_t chunk_rows = 0);

}  // namespace olmo::kernels
