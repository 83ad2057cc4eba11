// Prepare-time audit index: loading and contamination checks (see corpus_index.h).
#include "audit/corpus_index.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <regex>
#include <unordered_map>

#include "core/error.h"
#include "core/file_io.h"
#include "corpus/prepare.h"

namespace fs = std::filesystem;

namespace olmo::audit {

namespace {

struct DirIndex {
  bool ok = false;
  std::vector<TokenHistogram> part_counts;
  std::vector<CorpusIndex::Doc> docs;  // entry = part index here
  std::vector<uint64_t> ngrams;
  uint32_t sample = 0;
};

struct Reader {
  const std::string& buf;
  const std::string& path;
  size_t at = 0;
  template <class T>
  T get() {
    OLMO_CHECK(at + sizeof(T) <= buf.size(), path, ": truncated audit index file");
    T x;
    std::memcpy(&x, buf.data() + at, sizeof(T));
    at += sizeof(T);
    return x;
  }
  void magic(const char* m) {
    OLMO_CHECK(buf.size() >= 8 && buf.compare(0, 8, m) == 0, path, ": not an audit index file (",
               m, ")");
    at = 8;
  }
};

DirIndex load_dir(const fs::path& dir, uint32_t vocab, bool with_ngrams) {
  DirIndex d;
  fs::path tc = dir / "token_counts.bin", db = dir / "docs.bin", ng = dir / "ngrams13.bin";
  if (!fs::exists(tc) || !fs::exists(db) || !fs::exists(ng)) return d;
  {
    std::string buf = read_file(tc.string());
    std::string p = tc.string();
    Reader r{buf, p};
    r.magic("OLMOTCNT");
    uint32_t v = r.get<uint32_t>(), parts = r.get<uint32_t>();
    OLMO_CHECK(v <= vocab, p, ": token counts over a vocabulary of ", v,
               " do not fit the model vocabulary ", vocab);
    for (uint32_t i = 0; i < parts; ++i) {
      uint32_t nnz = r.get<uint32_t>();
      std::vector<uint32_t> ids(nnz);
      std::vector<uint64_t> cnt(nnz);
      for (auto& x : ids) x = r.get<uint32_t>();
      for (auto& x : cnt) x = r.get<uint64_t>();
      TokenHistogram h(vocab);
      for (uint32_t k = 0; k < nnz; ++k) h.add_count(ids[k], cnt[k]);
      d.part_counts.push_back(std::move(h));
    }
  }
  {
    std::string buf = read_file(db.string());
    std::string p = db.string();
    Reader r{buf, p};
    r.magic("OLMODOCS");
    uint64_t n = r.get<uint64_t>();
    OLMO_CHECK(buf.size() == 16 + n * 16, p, ": size does not match its ", n, " documents");
    for (uint64_t i = 0; i < n; ++i) {
      CorpusIndex::Doc doc;
      doc.entry = r.get<uint32_t>();
      doc.tokens = r.get<uint32_t>();
      doc.hash = r.get<uint64_t>();
      d.docs.push_back(doc);
    }
  }
  if (with_ngrams) {
    std::string buf = read_file(ng.string());
    std::string p = ng.string();
    Reader r{buf, p};
    r.magic("OLMONG13");
    uint32_t n = r.get<uint32_t>();
    OLMO_CHECK(n == uint32_t(corpus::kNgram), p, ": n-grams of ", n, " tokens, expected ",
               corpus::kNgram);
    d.sample = r.get<uint32_t>();
    uint64_t count = r.get<uint64_t>();
    OLMO_CHECK(buf.size() == 24 + count * 8, p, ": size does not match its ", count, " hashes");
    d.ngrams.resize(count);
    std::memcpy(d.ngrams.data(), buf.data() + 24, count * 8);
  }
  d.ok = true;
  return d;
}

}  // namespace

void count_file_tokens(const std::string& path, TokenHistogram& h) {
  MappedFile m(path);
  OLMO_CHECK(m.size() % 4 == 0, path, ": size ", m.size(), " is not a multiple of 4");
  h.add(reinterpret_cast<const uint32_t*>(m.data()), int64_t(m.size() / 4));
}

uint64_t ngram_index_bytes(const std::vector<std::string>& files) {
  std::map<std::string, uint64_t> dirs;
  for (auto& f : files) {
    fs::path ng = fs::path(f).parent_path() / "ngrams13.bin";
    if (fs::exists(ng)) dirs[ng.string()] = fs::file_size(ng);
  }
  uint64_t n = 0;
  for (auto& [k, v] : dirs) n += v;
  return n;
}

CorpusIndex load_corpus_index(const std::vector<std::string>& files, uint32_t vocab,
                              bool with_ngrams) {
  CorpusIndex idx;
  idx.entries = files;
  idx.counts = TokenHistogram(vocab);
  std::map<std::string, DirIndex> dirs;
  static const std::regex part_re(R"(part-(\d{5})\.npy)");
  std::vector<std::vector<uint64_t>> gram_sets;
  for (size_t e = 0; e < files.size(); ++e) {
    fs::path p(files[e]);
    std::smatch m;
    std::string name = p.filename().string();
    std::string dkey = p.parent_path().string();
    if (!std::regex_match(name, m, part_re)) {
      idx.missing.push_back(files[e]);
      continue;
    }
    auto it = dirs.find(dkey);
    if (it == dirs.end()) {
      it = dirs.emplace(dkey, load_dir(p.parent_path(), vocab, with_ngrams)).first;
      if (it->second.ok && with_ngrams) gram_sets.push_back(it->second.ngrams);
    }
    const DirIndex& d = it->second;
    size_t part = std::stoul(m[1].str());
    if (!d.ok || part >= d.part_counts.size()) {
      idx.missing.push_back(files[e]);
      continue;
    }
    OLMO_CHECK(!with_ngrams || idx.ngram_sample == 0 || idx.ngram_sample == d.sample, dkey,
               ": 13-gram sample ", d.sample, " differs from another entry's ", idx.ngram_sample);
    if (with_ngrams) idx.ngram_sample = d.sample;
    idx.counts.merge(d.part_counts[part]);
    for (auto& doc : d.docs)
      if (doc.entry == part) idx.docs.push_back({doc.hash, uint32_t(e), doc.tokens});
  }
  for (auto& g : gram_sets) idx.ngrams.insert(idx.ngrams.end(), g.begin(), g.end());
  std::sort(idx.ngrams.begin(), idx.ngrams.end());
  idx.ngrams.erase(std::unique(idx.ngrams.begin(), idx.ngrams.end()), idx.ngrams.end());
  std::sort(idx.docs.begin(), idx.docs.end(),
            [](auto& a, auto& b) { return a.hash != b.hash ? a.hash < b.hash : a.entry < b.entry; });
  return idx;
}

std::vector<HeldoutDoc> contaminated_docs(const CorpusIndex& idx,
                                          const std::vector<std::string>& files, uint32_t eos,
                                          double threshold) {
  std::vector<HeldoutDoc> out;
  int64_t doc_index = 0;
  for (auto& path : files) {
    OLMO_CHECK(fs::exists(path), "held-out token file not found: ", path);
    MappedFile m(path);
    OLMO_CHECK(m.size() % 4 == 0, path, ": size ", m.size(), " is not a multiple of 4");
    const uint32_t* t = reinterpret_cast<const uint32_t*>(m.data());
    const int64_t n = int64_t(m.size() / 4);
    int64_t start = 0;
    for (int64_t i = 0; i <= n; ++i) {
      if (i < n && t[i] != eos) continue;
      int64_t len = i - start;
      if (len > 0) {
        HeldoutDoc d;
        d.index = doc_index;
        d.tokens = len;
        d.file = path;
        d.offset = start;
        uint64_t h = corpus::doc_hash(t + start, size_t(len));
        auto it = std::lower_bound(idx.docs.begin(), idx.docs.end(), h,
                                   [](const CorpusIndex::Doc& a, uint64_t x) { return a.hash < x; });
        if (it != idx.docs.end() && it->hash == h && it->tokens == uint32_t(len)) {
          d.exact = true;
          d.train_entry = idx.entries[it->entry];
        }
        if (idx.ngram_sample > 0)
          for (int64_t k = start; k + corpus::kNgram <= i; ++k) {
            uint64_t g = corpus::ngram_hash(t + k);
            if (g % idx.ngram_sample) continue;
            ++d.grams;
            d.grams_in_train += std::binary_search(idx.ngrams.begin(), idx.ngrams.end(), g);
          }
        // At least 3 sampled 13-grams before a share is trusted (short documents: exact only).
        bool ngram_hit = d.grams >= 3 && double(d.grams_in_train) >= threshold * double(d.grams);
        if (d.exact || ngram_hit) out.push_back(d);
      }
      ++doc_index;
      start = i + 1;
    }
  }
  return out;
}

std::vector<Finding> check_contamination(const CorpusIndex& idx, const std::string& label,
                                         const std::vector<std::string>& files, uint32_t eos,
                                         double threshold, size_t max_listed) {
  std::vector<Finding> out;
  auto docs = contaminated_docs(idx, files, eos, threshold);
  for (size_t i = 0; i < docs.size() && i < max_listed; ++i) {
    auto& d = docs[i];
    std::string how = d.exact ? cat("identical to a training document in ", d.train_entry)
                              : cat(d.grams_in_train, " of its ", d.grams,
                                    " sampled 13-grams occur in the training mix");
    out.push_back({"contamination", 0,
                   cat("held-out set '", label, "' document ", d.index, " (", d.file,
                       " tokens [", d.offset, ", ", d.offset + d.tokens, "), ", d.tokens,
                       " tokens): ", how)});
  }
  if (docs.size() > max_listed)
    out.push_back({"contamination", 0, cat("held-out set '", label, "': ", docs.size(),
                                           " contaminated documents in all")});
  return out;
}

std::vector<Finding> check_cross_entry_duplicates(const CorpusIndex& idx, size_t max_listed) {
  std::vector<Finding> out;
  size_t count = 0;
  for (size_t i = 0; i < idx.docs.size();) {
    size_t j = i;
    while (j < idx.docs.size() && idx.docs[j].hash == idx.docs[i].hash) ++j;
    std::vector<uint32_t> entries;
    for (size_t k = i; k < j; ++k) entries.push_back(idx.docs[k].entry);
    entries.erase(std::unique(entries.begin(), entries.end()), entries.end());
    if (entries.size() > 1 && idx.docs[i].tokens > 0) {
      if (++count <= max_listed) {
        std::string where;
        for (size_t k = 0; k < entries.size(); ++k)
          where += cat(k ? ", " : "", idx.entries[entries[k]]);
        out.push_back({"duplicate_across_entries", 0,
                       cat("a document of ", idx.docs[i].tokens, " tokens appears under ",
                           entries.size(), " mix entries: ", where)});
      }
    }
    i = j;
  }
  if (count > max_listed)
    out.push_back({"duplicate_across_entries", 0,
                   cat(count, " documents appear under more than one mix entry in all")});
  return out;
}

}  // namespace olmo::audit
