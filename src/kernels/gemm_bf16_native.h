// Internal: gemm_micro_bf16's native VDPBF16PS path (gemm_bf16_avx512bf16.cpp; layouts there),
// the packing and tile loop gemm_micro.cpp's loop nest calls where kernels::cpu_has_bf16().
// Packed blocks: pairs of bf16 along the depth, one per float slot ((kc + 1) / 2 per row/column).
#pragma once
#include <stdint.h>

namespace olmo::kernels::isa_avx512bf16 {

int64_t gemm_dot_nr();  // columns of the register tile (64)
void gemm_dot_pack_a(bool ta, const uint16_t* A, int64_t lda, int64_t i0, int64_t mc,
                     int64_t p0, int64_t kc, float* Ap);
void gemm_dot_pack_b(bool tb, const uint16_t* B, int64_t ldb, int64_t p0, int64_t kc, int64_t j0,
                     int64_t nc, float* Bp);
// C[0:mc, 0:nc] = alpha * Ap Bp + (first ? beta * C : C) over kq pair steps (gemm_micro_body.h's
// micro_macro contract).
void gemm_dot_macro(int64_t mc, int64_t nc, int64_t kq, const float* Ap, const float* Bp,
                    float alpha, float beta, bool first, float* C, int64_t ldc);

}  // namespace olmo::kernels::isa_avx512bf16
