// Our own fp32 GEMM: a Goto/BLIS-style loop nest (B packed in kc x nc panels, A in mc x kc
// blocks) around a register-blocked FMA tile (MR x NR = 6 x 2 Vec: 6 x 16 on AVX2), written once
// over simd.h's Vec (gemm_micro_body.h). Same contract as gemm() (gemm.h):
//
//   C[M,N] = alpha * op(A) @ op(B) + beta * C   (row-major; ta / tb / ld* as in gemm.h,
//                                               ld* = 0 means tight; beta == 0: C not read)
//
// Deterministic: each C element is summed over p in order within a kc block, and the kc blocks
// are added into C in K order (one fmadd each), so the bits depend on kc only -- never on the
// thread count, mc, nc or the tile an element falls in. Threads: OpenMP (the current team size;
// serial inside a parallel region), each thread a range of whole MR-row slivers of C; each kc x nc
// B panel is packed by all threads together (two barriers per panel).
// Cost: 2*M*N*K flops plus packing (A: M*K once per nc block of N; B: N*K once) and one C
// read-modify-write per kc block (C's lines prefetched at the start of each tile). Memory: a
// packed B panel (kc*nc floats, calling thread's scratch) and one packed A block per thread
// (mc*kc floats), Scratch::gemm_pack_b / gemm_pack_a.
// gemm() routes the shapes where this beats oneDNN (the rule is in gemm.h); it may be called
// directly (tests, bench).
#pragma once
#include <cstdint>

namespace olmo::kernels {

// Cache blocking. kc changes the summation order (hence the bits); mc and nc do not.
struct GemmMicroBlocking {
  int64_t kc = 256;   // depth of one packed block: A sliver MR*kc, B sliver NR*kc (16 KB: L1)
  int64_t mc = 144;   // rows of a packed A block (mc*kc*4 = 144 KB: L2)
  int64_t nc = 3072;  // columns of a packed B panel (kc*nc*4 = 3 MB: L3)
};

void gemm_micro(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                const float* B, float beta, float* C, int64_t lda = 0, int64_t ldb = 0,
                int64_t ldc = 0, const GemmMicroBlocking& blk = GemmMicroBlocking{});

// Register tile of the active ISA's copy: MR = 6 rows, NR columns (16 on AVX2).
int64_t gemm_micro_nr();

}  // namespace olmo::kernels
