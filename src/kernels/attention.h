// Scaled dot-product attention, forward and backward (fp32, row-major), causal with optional
// sliding window and intra-document masking, GQA. Flash-attention style: keys are visited tile by
// tile with an online softmax, so memory is O(T * hd) per thread, never a T x T score matrix.
//
// Layouts: q, out, dout, dq [B, T, H, hd]; k, v, dk, dv [B, T, KV, hd]; lse [B, H, T];
//          doc_ids [B, T] or nullptr. Head h reads kv head h / (H / KV) (H % KV == 0).
// Mask: key j is visible to query i iff j <= i, and (window <= 0 or i - j < window), and
//       (doc_ids == nullptr or doc_ids[b,j] == doc_ids[b,i]). Every query sees at least itself.
// Math: s_ij = (q_i . k_j) / sqrt(hd); lse_i = log sum_j exp(s_ij); out_i = sum_j p_ij v_j with
//       p_ij = exp(s_ij - lse_i) (softmax in fp32).
// Cost: 4 * hd * (visible pairs) flops forward, ~10 * hd * (visible pairs) backward (S and P
//       are recomputed); tiles fully outside the mask are skipped, so a sliding layer costs
//       ~T * window, not T^2. Threads: OpenMP over (b, h, query tile) forward, over (b, kv head)
//       backward; results are deterministic (no atomics, fixed summation order) and independent
//       of the thread count.
#pragma once
#include <cstdint>

namespace olmo::kernels {

struct AttnShape {
  int64_t B, T, H, KV, hd;
  int64_t window;  // <= 0: full causal; w > 0: query i sees keys i-w+1 .. i (w keys incl. itself)
};

// out [B,T,H,hd] and lse [B,H,T] are overwritten. Throws olmo::Error on a bad shape.
void attention_forward(const AttnShape& s, const float* q, const float* k, const float* v,
                       const int32_t* doc_ids, float* out, float* lse);

// Given out and lse from attention_forward and dout = dL/dout, writes dq, dk, dv (overwritten).
void attention_backward(const AttnShape& s, const float* q, const float* k, const float* v,
                        const int32_t* doc_ids, const float* out, const float* lse,
                        const float* dout, float* dq, float* dk, float* dv);

// Plain references (one query row at a time, O(T) scratch), instantiated for float and double;
// the double version is what the gradient checks differentiate numerically.
template <class T>
void attention_forward_ref(const AttnShape& s, const T* q, const T* k, const T* v,
                           const int32_t* doc_ids, T* out, T* lse);
template <class T>
void attention_backward_ref(const AttnShape& s, const T* q, const T* k, const T* v,
                            const int32_t* doc_ids, const T* out, const T* lse, const T* dout,
                            T* dq, T* dk, T* dv);

// Visible-pair count of the mask (for FLOP accounting): sum over b, queries i of the number of
// keys i sees, for one head. Multiply by H for all heads.
int64_t attention_visible_pairs(const AttnShape& s, const int32_t* doc_ids);

// (query, key) pairs a causal sequence of T tokens attends with sliding window `window` (<= 0 or
// >= T: full causal), document masking not subtracted. The one count behind the FLOPs of the
// attention kernels' profiler scopes and of model/flops.cpp's MFU.
inline double causal_pairs(int64_t T, int64_t window) {
  if (T <= 0) return 0;
  const double t = double(T), w = double(window);
  return window <= 0 || window >= T ? t * (t + 1) / 2 : w * (w + 1) / 2 + (t - w) * w;
}

}  // namespace olmo::kernels
