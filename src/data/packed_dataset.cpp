// NumpyPackedFSLDataset equivalent: EOS split, truncation, OBFD packing, padding (see
// packed_dataset.h).
#include "data/packed_dataset.h"

#include <algorithm>
#include <deque>
#include <filesystem>
#include <map>
#include <numeric>

#include "core/error.h"
#include "data/doc_lengths.h"
#include "data/fsl_dataset.h"
#include "data/py_random.h"
#include "core/sha256.h"

namespace olmo::data {

namespace {

// Optimized Best-Fit Decreasing over document lengths (already sorted, decreasing): returns
// the bins as lists of positions into `lengths`. space -> bins with exactly that much room,
// first-opened first (OLMo-core's space_to_bins deques); the smallest space >= length wins.
std::vector<std::vector<int64_t>> obfd(const std::vector<int64_t>& lengths, int64_t cap) {
  std::vector<std::vector<int64_t>> bins;
  std::map<int64_t, std::deque<int64_t>> by_space;
  for (int64_t d = 0; d < int64_t(lengths.size()); ++d) {
    const int64_t len = lengths[size_t(d)];
    int64_t bin, space;
    auto it = by_space.lower_bound(len);
    if (it == by_space.end()) {
      bin = int64_t(bins.size());
      bins.emplace_back();
      space = cap;
    } else {
      space = it->first;
      bin = it->second.front();
      it->second.pop_front();
      if (it->second.empty()) by_space.erase(it);
    }
    bins[size_t(bin)].push_back(d);
    if (space - len > 0) by_space[space - len].push_back(bin);
  }
  return bins;
}

}  // namespace

PackedFslDataset::PackedFslDataset(std::vector<std::string> paths, int64_t seq_len,
                                   uint32_t vocab_size, PackedOptions opt)
    : paths_(std::move(paths)), seq_len_(seq_len), vocab_(vocab_size), opt_(opt) {
  OLMO_CHECK(!paths_.empty(), "packed dataset: at least one token file is required");
  OLMO_CHECK(opt_.eos_id >= 0 && opt_.eos_id < int64_t(vocab_), "packed dataset: packed "
             "instances need an EOS id (documents are split on it) inside the vocabulary [0, ",
             vocab_, "), got ", opt_.eos_id);
  OLMO_CHECK(seq_len_ > 0 && (seq_len_ & (seq_len_ - 1)) == 0, "packed dataset: sequence length ",
             seq_len_, " must be a power of two (OLMo-core's OBFD segment tree requires it)");
  OLMO_CHECK(opt_.source_group_size >= 1, "packed dataset: source_group_size must be >= 1, got ",
             opt_.source_group_size);
  OLMO_CHECK(opt_.pad_id < vocab_, "packed dataset: pad id ", opt_.pad_id,
             " is outside the vocabulary [0, ", vocab_, ")");
  const uint32_t eos = uint32_t(opt_.eos_id);
  for (const std::string& p : paths_) {
    OLMO_CHECK(file_exists(p), p, ": token file not found");
    MappedFile m(p);
    OLMO_CHECK(m.size() % 4 == 0, p, ": size ", m.size(),
               " bytes is not a multiple of 4 (expected headerless little-endian uint32 tokens)");
    sizes_.push_back(m.size());
    maps_.push_back(std::move(m));
  }
  inst_begin_.push_back(0);
  const int64_t G = opt_.source_group_size;
  for (int64_t g0 = 0; g0 < int64_t(paths_.size()); g0 += G) {
    // Documents of the group's files, in file order (iter_document_indices, truncated).
    std::vector<Doc> docs;
    for (int64_t f = g0; f < std::min<int64_t>(g0 + G, int64_t(paths_.size())); ++f) {
      const auto* tok = reinterpret_cast<const uint32_t*>(maps_[size_t(f)].data());
      const int64_t n = int64_t(sizes_[size_t(f)] / 4);
      if (opt_.validate) check_token_ids(tok, n, vocab_, paths_[size_t(f)]);
      int64_t start = 0;
      for (int64_t i = 0; i < n; ++i)
        if (tok[i] == eos) {
          docs.push_back({int32_t(f), start, std::min(i + 1, start + seq_len_)});
          start = i + 1;
        }
    }
    // Sort by length, decreasing; equal lengths in document order (see the header).
    std::vector<int64_t> order(docs.size());
    std::iota(order.begin(), order.end(), int64_t(0));
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return docs[size_t(a)].end - docs[size_t(a)].start >
             docs[size_t(b)].end - docs[size_t(b)].start;
    });
    std::vector<int64_t> lengths(order.size());
    for (size_t k = 0; k < order.size(); ++k)
      lengths[k] = docs[size_t(order[k])].end - docs[size_t(order[k])].start;
    for (const auto& bin : obfd(lengths, seq_len_)) {
      int64_t tokens = 0;
      for (int64_t k : bin) {
        docs_.push_back(docs[size_t(order[size_t(k)])]);
        tokens += lengths[size_t(k)];
      }
      inst_begin_.push_back(int64_t(docs_.size()));
      inst_group_.push_back(int32_t(g0 / G));
      inst_tokens_.push_back(tokens);
      total_tokens_ += tokens;
    }
  }
  OLMO_CHECK(size() > 0, "packed dataset is empty: ", paths_.size(), " token file(s) (first: ",
             paths_[0], ") hold no EOS-terminated document (EOS id ", opt_.eos_id, ")");
}

void PackedFslDataset::check_index(int64_t index) const {
  OLMO_CHECK(index >= 0 && index < size(), "packed dataset: instance ", index,
             " out of range [0, ", size(), ")");
}

std::vector<PackedFslDataset::Doc> PackedFslDataset::instance_documents(int64_t index) const {
  check_index(index);
  return {docs_.begin() + inst_begin_[size_t(index)],
          docs_.begin() + inst_begin_[size_t(index) + 1]};
}

std::string PackedFslDataset::describe(int64_t index) const {
  std::vector<Doc> docs = instance_documents(index);
  std::string s = cat(docs.size(), " document", docs.size() == 1 ? "" : "s", " (",
                      inst_tokens_[size_t(index)], " tokens, then padding):");
  for (size_t d = 0; d < docs.size() && d < 4; ++d)
    s += cat(d ? ", " : " ", paths_[size_t(docs[d].file)], " [", docs[d].start, ", ",
             docs[d].end, ")");
  if (docs.size() > 4) s += ", ...";
  return s;
}

int64_t PackedFslDataset::label_length(int64_t index) const {
  check_index(index);
  return inst_tokens_[size_t(index)];
}

void PackedFslDataset::read(int64_t index, int32_t* out) const {
  check_index(index);
  int64_t t = 0;
  for (int64_t d = inst_begin_[size_t(index)]; d < inst_begin_[size_t(index) + 1]; ++d) {
    const Doc& doc = docs_[size_t(d)];
    const auto* tok = reinterpret_cast<const uint32_t*>(maps_[size_t(doc.file)].data());
    uint32_t mx = 0;
    for (int64_t i = doc.start; i < doc.end; ++i) {
      out[t++] = int32_t(tok[i]);
      mx = std::max(mx, tok[i]);
    }
    if (mx >= vocab_)
      check_token_ids(tok + doc.start, doc.end - doc.start, vocab_, paths_[size_t(doc.file)],
                      doc.start);
  }
  std::fill(out + t, out + seq_len_, int32_t(opt_.pad_id));
}

void PackedFslDataset::hash_into(Hasher& h, int64_t index) const {
  std::vector<int32_t> buf(static_cast<size_t>(seq_len_));
  read(index, buf.data());
  h.update(buf.data(), buf.size() * 4);  // ids < 2^31: the same bytes as the uint32 tokens
}

std::vector<int32_t> PackedFslDataset::document_lengths(int64_t index) const {
  std::vector<int32_t> buf(static_cast<size_t>(seq_len_));
  read(index, buf.data());
  return data::document_lengths(buf.data(), seq_len_, int32_t(opt_.eos_id));
}

std::string PackedFslDataset::fingerprint() const {
  // OLMo-core NumpyDatasetBase.fingerprint for NumpyPackedFSLDataset(dtype=np.uint32,
  // bos_token_id=None, long_doc_strategy=truncate, use_array_if_local=None).
  Sha256 h;
  auto put = [&](const std::string& s) { h.update(s.data(), s.size()); };
  put("class=NumpyPackedFSLDataset");
  put(cat("vocab_size=", vocab_, ","));
  put(cat("pad_token_id=", opt_.pad_id, ","));
  put(cat("eos_token_id=", opt_.eos_id, ","));
  put("dtype=<class 'numpy.uint32'>,");
  put("long_doc_strategy=truncate,");
  put("bos_token_id=None,");
  put(cat("sequence_length=", seq_len_, ","));
  if (opt_.source_group_size > 1) put(cat("source_group_size=", opt_.source_group_size, ","));
  for (size_t i = 0; i < paths_.size(); ++i)
    put(cat("path=", std::filesystem::path(paths_[i]).filename().string(), ",size=", sizes_[i],
            ","));
  return h.hex_digest();
}

std::vector<std::string> permute_sources(const std::vector<std::string>& paths, uint64_t seed) {
  std::vector<int64_t> order = python_shuffle_order(int64_t(paths.size()), seed);
  std::vector<std::string> out;
  out.reserve(paths.size());
  for (int64_t i : order) out.push_back(paths[size_t(i)]);
  return out;
}

}  // namespace olmo::data
