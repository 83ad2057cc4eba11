// Internal: per-row softmax kernels of the fused LM-head loss, one implementation per ISA
// (loss.cpp scalar, loss_avx2.cpp, loss_avx512.cpp), selected by active_isa().
//   row_lse(z, V)               -> log sum_v exp(z_v)          (reads z once... twice from L2)
//   row_grad(z, V, lse, a)      z_v <- a * exp(z_v - lse)      (in place)
#pragma once
#include <cstdint>

namespace olmo::kernels::loss_detail {

struct RowKernels {
  float (*row_lse)(const float* z, int64_t V);
  void (*row_grad)(float* z, int64_t V, float lse, float a);
};

RowKernels row_kernels_scalar();
RowKernels row_kernels_avx2();
RowKernels row_kernels_avx512();

}  // namespace olmo::kernels::loss_detail
