// Per-instance document boundaries for intra-document attention masking, as OLMo-core's
// data/utils.py::get_document_lengths with bos_token_id=None: documents end at an EOS token
// (EOS inclusive); a trailing run without EOS is one more document. Example (E = EOS):
//   [a E b c] -> lengths [2, 2]; [a b E] -> [3]; [E E] -> [1, 1].
// doc_ids turns one instance into per-token document ordinals [n] (0, 0, 1, 1 above): two
// positions may attend to each other only when their ids are equal. Cost O(n).
#pragma once
#include <cstdint>
#include <vector>

namespace olmo::data {

std::vector<int32_t> document_lengths(const int32_t* tokens, int64_t n, int32_t eos_id);
std::vector<int32_t> document_lengths(const uint32_t* tokens, int64_t n, uint32_t eos_id);

// out[n]: document ordinal of each token, restarting at 0 for each instance.
void document_ids(const int32_t* tokens, int64_t n, int32_t eos_id, int32_t* out);
// Same, from lengths (sum of lengths == n).
std::vector<int32_t> document_ids_from_lengths(const std::vector<int32_t>& lengths);

// Batched form: tokens [B, T] row-major -> ids [B, T].
std::vector<int32_t> document_ids_batch(const int32_t* tokens, int64_t B, int64_t T,
                                        int32_t eos_id);

}  // namespace olmo::data
