// Our own fp32 GEMM: a Goto/BLIS-style loop nest (B packed in kc x nc panels, A in mc x kc
// blocks) around a register-blocked FMA tile (MR x NR = 6 x 2 Vec: 6 x 16 on AVX2), written once
// over simd.h's Vec (gemm_micro_body.h). Same contract as gemm() (gemm.h):
//
//   C[M,N] = alpha * op(A) @ op(B) + beta * C   (row-major; ta / tb / ld* as in gemm.h,
//                                               ld* = 0 means tight; beta == 0: C not read)
//
// Deterministic and ISA-invariant: each C element is summed over p in order within a kc block
// (one fmadd per p, fused on every ISA: simd.h), and the kc blocks are added into C in K order
// (one fmadd each), so the bits depend on kc only -- never on the ISA (scalar, AVX2, AVX-512
// give the same bits), the thread count, mc, nc or the tile an element falls in. kc is the
// constant below, never derived from the detected cache sizes. Threads: OpenMP (the current team size;
// serial inside a parallel region), each thread a range of whole MR-row slivers of C; the B
// panels are packed by all threads together, one barrier per panel group (gemm_micro.cpp: a
// group is one kc block, or all of K when its panels fit kc*nc floats, e.g. the LM head's
// weight gradient over 416 tokens: then each C block takes its kc blocks while in cache).
// Cost: 2*M*N*K flops plus packing (A: M*K once per nc block of N; B: N*K once) and one C
// read-modify-write per kc block (C's lines prefetched at the start of each tile). Memory: two
// packed B panel buffers (up to kc*nc floats each, calling thread's scratch) and one packed A
// block per thread (mc*kc floats), Scratch::gemm_pack_b / gemm_pack_a.
// gemm() and gemm_bf16() run every call here (gemm.h); it may be called directly (tests, bench).
#pragma once
#include <cstdint>

#include "kernels/bf16.h"

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

// Same contract with bf16 A and B in VDPBF16PS's arithmetic (measured on Zen 4, ctest
// kernels_bf16_dot_semantics; docs/invariance.md): per C element and kc block, from a zero
// accumulator, for each depth pair q in order
//   acc = FTZ(fma(A[2q+1], B[2q+1], acc));  acc = FTZ(fma(A[2q], B[2q], acc))
// (the odd element first, each product fused, one rounding to nearest even each; denormal bf16
// inputs read as zero, FTZ: a denormal sum flushed to zero with its sign; a block of odd depth
// padded with a zero pair element), then the blocks into C as gemm_micro (one fmadd each, K
// order). kc must be even. Native VDPBF16PS tiles (6 x 64) where kernels::cpu_has_bf16()
// (gemm_bf16_avx512bf16.cpp), else the emulation on every ISA (operands widened, pair-swapped
// and flushed while packed; gemm_micro's tile with Vec::ftz after each fmadd): the same bits
// on every ISA, thread count and CPU. The emulation costs about twice gemm_micro (the flush).
void gemm_micro_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                     const bf16_t* A, const bf16_t* B, float beta, float* C, int64_t lda = 0,
                     int64_t ldb = 0, int64_t ldc = 0,
                     const GemmMicroBlocking& blk = GemmMicroBlocking{});

// Register tile of the active ISA's copy: MR = 6 rows, NR columns (16 on AVX2).
int64_t gemm_micro_nr();

}  // namespace olmo::kernels
