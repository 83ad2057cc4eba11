// Attention with bf16 products for the bf16_mixed precision (model/olmo3.h), forward and
// backward: the contract of attention.h (layouts, mask, GQA, lse, fp32 in and out) with these
// rounding points, the places PyTorch's CPU flash attention under bf16 autocast rounds:
//   q~, k~, v~, dout~ = bf16(q), bf16(k), bf16(v), bf16(dout)     (inputs, rounded on entry)
//   forward:  s_ij = q~_i . k~_j (fp32 accumulation);  m_i = ceil(max_j s_ij * log2e / sqrt(hd))
//             (an integer, base-2 units);  e_ij = 2^(s_ij log2e / sqrt(hd) - m_i) (fp32);
//             l_i = sum_j e_ij (fp32, unrounded);  out_i = (sum_j bf16(e_ij) v~_j) / l_i;
//             lse_i = (m_i + log2 l_i) ln 2.
//   backward: p_ij = exp(s_ij / sqrt(hd) - lse_i) (fp32);  D_i = dout~_i . out_i (fp32 out);
//             dv_j = sum_i bf16(p_ij) dout~_i;  dp_ij = dout~_i . v~_j;
//             ds_ij = p_ij (dp_ij - D_i) / sqrt(hd);  dk_j = sum_i bf16(ds_ij) q~_i;
//             dq_i = sum_j bf16(ds_ij) k~_j;  every product fp32-accumulated, outputs fp32.
// The integer running max makes the forward's rounded probabilities independent of the tile
// order: 2^(x - m) for integer m is bf16(2^x) scaled by an exact power of two, so the tiled
// kernel (whose running max grows tile by tile) and the one-row reference round the same value.
// bf16(x) is round-to-nearest-even with fp32 denormals flushed to zero (VCVTNEPS2BF16; the
// VDPBF16PS products treat denormal inputs as zero too): kernels/bf16.h's converter differs only
// below 2^-126 in magnitude.
//
// Fast path: AVX512_BF16 (VDPBF16PS register tiles, attention_bf16_avx512bf16.cpp), same tiling,
// skipping, threading and determinism as the fp32 kernels. Where kernels::cpu_has_bf16() is false
// (no AVX512_BF16, OLMO_ISA below avx512, OLMO_BF16=0) these entry points run the exact
// emulation (attention_bf16_emu.cpp: scalar, the same bits, ~20x slower), so a bf16_mixed run
// has the same bits on every CPU and ISA (docs/invariance.md).
// Error against the fp32 kernel: dominated by the input rounding (relative <= 2^-9 per element);
// tests/kernels/attention_bf16_test.cpp states and checks the bounds.
// Cost: the fp32 kernels' FLOPs (attention.h) at VDPBF16PS rate (2 multiply-adds per lane and
// instruction), plus O(T * hd) conversions per (b, head).
#pragma once
#include <cstdint>
#include <string>

#include "core/runtime.h"
#include "kernels/attention.h"

namespace olmo::kernels {

// True when attention_*_bf16 run the bf16 kernels (cpu_has_bf16()), false when they fall back
// to the fp32 kernels.
bool attention_bf16_native();

// bf16_mixed's attention (model/olmo3.cpp): the bf16 kernels above (native or emulated), a
// function of the configuration only, never of timing (a pick by timing would change a run's
// bits from machine to machine). OLMO_ATTN_BF16=0 picks the fp32 kernels of attention.h, =1 (or
// unset) the bf16 ones; set_attention_bf16_override (1 / 0 as the variable, -1 back to the
// environment; for tests) replaces it. Decided once per process (cached).
bool attention_bf16_chosen();
void set_attention_bf16_override(int mode);

// Single-thread GFLOP/s forward + backward (attention_flops(s): 1x forward + 2x backward) of the
// fp32 kernels and of the bf16 kernels at shape s, best of `reps` after one untimed call each,
// interleaved three times so a burst of load on a shared machine does not favour one side. One
// OpenMP thread timed in its own CPU time (core/timer.h): on the shared 2-core machine of
// 2026-12-04 (load 17) wall time gave 0.82x and process CPU time / threads 0.74-2.65x (a thread
// preempted inside a parallel region stalls its peer, which sleeps uncounted) where the
// kernels' ratio is 1.4-1.7x; bf16_gflops = 0 where !attention_bf16_native(). Not profiled.
// Default shape: ~0.15 s on one Zen 5 core.
struct AttnProbe {
  AttnShape s{};
  double fp32_gflops = 0, bf16_gflops = 0;
};
AttnProbe probe_attention_precisions(const AttnShape& s = {1, 1024, 4, 4, 64, 0}, int reps = 3);

// attention_bf16_chosen()'s decision with its reason; the kernels never print it: the caller
// (train/model_setup.h report_attention_choice) records it in core/runtime.h and prints `why`.
// source/origin: env OLMO_ATTN_BF16, the default or the test override. why: the one line
// printed at run start, e.g. "attention (bf16_mixed): bf16 kernels (native AVX512_BF16)".
struct AttnChoice {
  bool bf16 = false;
  Source source = Source::default_value;
  std::string origin, why;
};
AttnChoice attention_bf16_choice();
std::string attention_bf16_why();  // attention_bf16_choice().why

void attention_forward_bf16(const AttnShape& s, const float* q, const float* k, const float* v,
                            const int32_t* doc_ids, float* out, float* lse);
void attention_backward_bf16(const AttnShape& s, const float* q, const float* k, const float* v,
                             const int32_t* doc_ids, const float* out, const float* lse,
                             const float* dout, float* dq, float* dk, float* dv);

// The rounding bf16(x) above, returned as the fp32 value it represents.
float bf16_round_ftz(float x);

// Plain references (one query row at a time, accumulation in double), instantiated for float and
// double. round = true: the rounding points above (what the fast kernels are held to);
// round = false: the same formulas (integer max included) with no rounding, i.e. exact
// attention: what the gradient checks differentiate numerically.
template <class T>
void attention_forward_bf16_ref(const AttnShape& s, const T* q, const T* k, const T* v,
                                const int32_t* doc_ids, T* out, T* lse, bool round = true);
template <class T>
void attention_backward_bf16_ref(const AttnShape& s, const T* q, const T* k, const T* v,
                                 const int32_t* doc_ids, const T* out, const T* lse,
                                 const T* dout, T* dq, T* dk, T* dv, bool round = true);

}  // namespace olmo::kernels
