// Per-thread scratch buffers that persist across calls and only grow, so a kernel that needs a
// large temporary (the LM head's [rows, V] logits tile, attention's tiles) pays the allocation
// and the first-touch page faults once per thread, not once per call.
//
//   float* tile = olmo::scratch<float>(olmo::Scratch::loss_logits, rows * V);
//
// Contract: the pointer is valid until the next scratch() call for the same slot on the same
// thread; contents are unspecified (not zeroed); 64-byte aligned. Slots are named so two kernels
// never share one by accident. Memory is never returned: bounded by the largest request per slot
// and thread (the LM head's tiles: <= 160 MB fp32 + 80 MB bf16 on the calling thread, a fixed size
// outside the per-token memory plan of model/flops.h). Cost: a bounds check.
#pragma once
#include <cstddef>
#include <cstdint>

namespace olmo {

enum class Scratch : int {
  // kernels/attention_body.h (slots 0..12); attention_bf16_avx512bf16.cpp (byte slabs, 0 and 12)
  attn0, attn1, attn2, attn3, attn4, attn5, attn6, attn7, attn8, attn9, attn10, attn11, attn12,
  // kernels/loss.cpp
  loss_x, loss_logits, loss_dx, loss_xb, loss_dlogits_b, loss_ce, loss_lz,
  // kernels/gemm.cpp (gemm_bf16 where oneDNN has no bf16 matmul: the fp32 copies of A and B)
  gemm_a, gemm_b,
  // kernels/gemm_micro.cpp (packed B panel on the calling thread, packed A block per thread)
  gemm_pack_a, gemm_pack_b,
  // kernels/kv_attention.cpp (one query row's scores against the cache, per thread)
  kv_scores,
  count
};

void* scratch_bytes(Scratch slot, size_t bytes);

template <class T>
T* scratch(Scratch slot, int64_t n) {
  return static_cast<T*>(scratch_bytes(slot, size_t(n > 0 ? n : 0) * sizeof(T)));
}

// Scratch slot i of attention's tile set (0 <= i <= 12).
inline Scratch attn_scratch(int i) { return Scratch(int(Scratch::attn0) + i); }

}  // namespace olmo
