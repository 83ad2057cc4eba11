// Attention of one new token per sequence against that sequence's KV cache (incremental
// decoding, model/kv_cache.h): the decode half of the decoder block's attention; a whole prompt
// at once goes through the tiled kernel (attention.h) instead.
//
// Layouts: q, out [rows, H, hd]; row i's cache is a ring of `slots` positions, K and V each
//          [slots, KV, hd], position t in slot t % slots (ring[i].k, ring[i].v). The caller has
//          written row i's own K/V (position pos[i]) into its ring first.
// Mask: row i (at position p = pos[i]) sees positions lo..p, lo = max(0, p - window + 1) for
//       window > 0, else 0; all of them must still be in the ring (p - lo < slots). Head h reads
//       kv head h / (H / KV).
// Math: as attention.h (s_t = q . k_t / sqrt(hd), softmax in fp32 with the max subtracted,
//       out = sum_t p_t v_t), one plain dot product per visible position.
// Cost: 4 * hd * H * (visible positions) flops per row; scores in per-thread scratch
//       (kernels/scratch.h, one row of at most `slots` floats). Threads: OpenMP over (row, head);
//       deterministic and independent of the thread count.
#pragma once
#include <cstdint>

namespace olmo::kernels {

struct KvRing {
  const float* k;  // [slots, KV, hd]
  const float* v;  // [slots, KV, hd]
};

// Throws olmo::Error on a bad shape or a position whose window is not in the ring.
void attention_decode(int64_t rows, int64_t H, int64_t KV, int64_t hd, int64_t window,
                      int64_t slots, const float* q, const KvRing* ring, const int64_t* pos,
                      float* out);

}  // namespace olmo::kernels
