// Global gradient-norm clipping as OLMo-core's TransformerTrainModule._clip_grad_norm does it
// (torch.nn.utils.get_total_norm + clip_grads_with_norm_): total L2 norm over all gradients, then
//   coef = min((1 / (norm + 1e-6f)) * float(max_norm), 1.0f);  g *= coef   (fp32 ops, as torch).
// The norm is accumulated in double over fixed 65536-element blocks summed in block order, so the
// result is identical for any thread count (torch sums per-tensor fp32 norms; we are at least as
// accurate: the two agree to fp32 rounding). A non-finite norm gives coef NaN/0 as in torch.
// Cost: one read pass (norm) + one read/write pass (scale, skipped when coef == 1 exactly).
#pragma once
#include <cstddef>

namespace olmo::optim {

// sum g^2 over n floats in double (the blocked order above): the local part of a distributed
// norm.
double sum_squares(const float* g, size_t n);

// sqrt(sum g^2) over n floats, returned rounded to fp32 (the value OLMo-core logs and feeds to
// the skip-step rule).
float total_grad_norm(const float* g, size_t n);

// Scale g by the clip coefficient computed from a precomputed total norm; returns the coef.
float clip_grads_with_norm(float* g, size_t n, double max_norm, float total_norm);

// Both: returns the pre-clip total norm.
float clip_grad_norm(float* g, size_t n, double max_norm);

}  // namespace olmo::optim
