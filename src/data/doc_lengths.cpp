// Document lengths / ids split on EOS (see doc_lengths.h).
#include "data/doc_lengths.h"

#include "core/error.h"

namespace olmo::data {

template <class T>
static std::vector<int32_t> lengths_impl(const T* tok, int64_t n, T eos) {
  std::vector<int32_t> out;
  if (n <= 0) return out;
  int64_t start = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (tok[i] == eos) {
      out.push_back(static_cast<int32_t>(i + 1 - start));
      start = i + 1;
    }
  }
  if (start < n) out.push_back(static_cast<int32_t>(n - start));
  return out;
}

std::vector<int32_t> document_lengths(const int32_t* tokens, int64_t n, int32_t eos_id) {
  return lengths_impl(tokens, n, eos_id);
}
std::vector<int32_t> document_lengths(const uint32_t* tokens, int64_t n, uint32_t eos_id) {
  return lengths_impl(tokens, n, eos_id);
}

void document_ids(const int32_t* tokens, int64_t n, int32_t eos_id, int32_t* out) {
  int32_t id = 0;
  for (int64_t i = 0; i < n; ++i) {
    out[i] = id;
    if (tokens[i] == eos_id) ++id;
  }
}

std::vector<int32_t> document_ids_from_lengths(const std::vector<int32_t>& lengths) {
  std::vector<int32_t> out;
  for (size_t d = 0; d < lengths.size(); ++d) {
    OLMO_CHECK(lengths[d] >= 0, "document_ids_from_lengths: negative length");
    out.insert(out.end(), static_cast<size_t>(lengths[d]), static_cast<int32_t>(d));
  }
  return out;
}

std::vector<int32_t> document_ids_batch(const int32_t* tokens, int64_t B, int64_t T,
                                        int32_t eos_id) {
  std::vector<int32_t> out(static_cast<size_t>(B * T));
  for (int64_t b = 0; b < B; ++b) document_ids(tokens + b * T, T, eos_id, out.data() + b * T);
  return out;
}

}  // namespace olmo::data
