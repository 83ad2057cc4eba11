// Fused LM head + cross-entropy + z-loss, chunked over rows so the [N, V] logits of a batch are
// never held at once: per chunk of rows, logits = x_c W^T (gemm), a row-wise log-sum-exp, the
// loss sums, and the gradient d/dlogits written in place, then dx_c = dlogits W and
// dW += dlogits^T x_c (gemm). Rows with target -100 are skipped entirely. Two matmul input
// types: fp32 (lm_head_loss) and bf16 (lm_head_loss_bf16, the bf16_mixed precision).
//
// Loss definition (OLMo-core cross_entropy_loss with compute_z_loss, reduction "sum"):
//   ce_sum = sum_{i valid} (lse_i - logit_i[t_i]),   z_sum = sum_{i valid} lse_i^2,
//   count  = number of valid rows (target != -100).
// The caller forms the loss, e.g. (ce_sum + z_coef * z_sum) / count with z_coef = 1e-5 (OLMo-core
// normalises the z term by the same divisor as CE), and passes grad_scale = 1 / count.
// Gradient: of grad_scale * (ce_sum + z_coef * z_sum) w.r.t. x (dx overwritten, ignored rows 0)
// and W (dW accumulated); either may be nullptr (then that gradient is not computed).
// Cost: 2*N*D*V flops forward (+4*N*D*V with gradients), memory chunk_rows * V floats.
#pragma once
#include <cstdint>

#include "core/token_ids.h"
#include "kernels/bf16.h"

namespace olmo::kernels {

struct LossSums {
  double ce_sum = 0, z_sum = 0;
  int64_t count = 0;
};


// Targets outside [0, V) other than -100 -> olmo::Error naming the row and the value.
// chunk_rows = 0 picks a size that keeps the fp32 logits tile <= ~160 MB (<= 1024 rows).
LossSums lm_head_loss(const float* x, const float* W, const int32_t* targets, int64_t N, int64_t D,
                      int64_t V, float z_coef, float grad_scale, float* dx, float* dW,
                      int64_t chunk_rows = 0);

// bf16_mixed: W is the bf16 copy of lm_head [V, D]; x, dx, dW stay fp32. The gathered x rows
// and d/dlogits are rounded to bf16 for the gemms (gemm_bf16: fp32 accumulation and output,
// beta = 1 into the fp32 dW); logits, lse, the loss sums and d/dlogits are computed in fp32.
// As PyTorch autocast runs F.linear in bf16 and the loss in fp32 (its logits are additionally
// rounded to bf16 before the upcast; ours stay fp32 from the GEMM). Same contract and errors
// as lm_head_loss; extra memory chunk_rows * (V + D) bf16.
LossSums lm_head_loss_bf16(const float* x, const bf16_t* W, const int32_t* targets, int64_t N,
                           int64_t D, int64_t V, float z_coef, float grad_scale, float* dx,
                           float* dW, int64_t chunk_rows = 0);

// The row pieces of lm_head_loss on the active ISA:
// lm_row_lse(z, V) = log sum_v exp(z_v);  lm_row_grad(z, V, lse, a): z_v <- a * exp(z_v - lse).
float lm_row_lse(const float* z, int64_t V);
void lm_row_grad(float* z, int64_t V, float lse, float a);

// Reference: full [N, V] logits in double, plain loops. T = float or double (double is what the
// gradient check differentiates). Same contract as lm_head_loss.
template <class T>
LossSums lm_head_loss_ref(const T* x, const T* W, const int32_t* targets, int64_t N, int64_t D,
                          int64_t V, double z_coef, double grad_scale, T* dx, T* dW);

}  // namespace olmo::kernels
