// Corpus extraction: unpacked Debian package trees -> documents (see corpus.h for the rules).
// Walks are sorted by relative path and skip symlinks, so the output depends only on the tree.
#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>

#include "core/error.h"
#include "core/file_io.h"
#include "core/hash.h"
#include "corpus/corpus.h"

namespace olmo::corpus {
namespace fs = std::filesystem;

static std::atomic<uint64_t> g_utf8_fixes{0};
uint64_t extraction_utf8_fixes() { return g_utf8_fixes.load(); }

namespace {

// Regular files (no symlinks) under base, as sorted relative paths, for which keep(rel) holds.
template <class Keep>
std::vector<std::string> walk(const fs::path& base, Keep keep) {
  OLMO_CHECK(fs::is_directory(base), base.string(), ": expected directory is missing");
  std::vector<std::string> out;
  for (auto it = fs::recursive_directory_iterator(base); it != fs::recursive_directory_iterator();
       ++it) {
    if (it->is_symlink() || !it->is_regular_file()) continue;
    std::string rel = it->path().lexically_relative(base).generic_string();
    if (keep(rel)) out.push_back(rel);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool has_dir(const std::string& rel, std::initializer_list<const char*> names) {
  size_t start = 0;
  for (size_t slash; (slash = rel.find('/', start)) != std::string::npos; start = slash + 1) {
    std::string_view comp(rel.data() + start, slash - start);
    for (const char* n : names)
      if (comp == n) return true;
  }
  return false;
}

std::string read_text(const fs::path& p) {
  std::string s = compression_of(p.string()) == Compression::kGzip
                      ? LineReader(p.string()).read_all()
                      : read_file(p.string());
  g_utf8_fixes += sanitize_utf8(s);
  return s;
}

bool blank(const std::string& s) {
  return s.find_first_not_of(" \t\r\n\f\v") == std::string::npos;
}

// First directory matching root/<prefix>*/<suffix> (sorted), or root/<prefix><suffix> path.
fs::path find_glob_dir(const fs::path& root, const std::string& parent, const std::string& prefix,
                       const std::string& suffix) {
  fs::path dir = root / parent;
  OLMO_CHECK(fs::is_directory(dir), dir.string(), ": expected directory is missing");
  std::vector<fs::path> hits;
  for (auto& e : fs::directory_iterator(dir)) {
    std::string n = e.path().filename().string();
    fs::path cand = suffix.empty() ? e.path() : e.path() / suffix;
    if (n.compare(0, prefix.size(), prefix) == 0 && fs::is_directory(cand)) hits.push_back(cand);
  }
  OLMO_CHECK(!hits.empty(), dir.string(), ": no ", prefix, "*/", suffix, " inside");
  std::sort(hits.begin(), hits.end());
  return hits.front();
}

void add_docs(std::vector<Document>& out, const fs::path& base, const std::vector<std::string>& rels,
              const std::string& source, bool strip_gz) {
  for (auto& rel : rels) {
    std::string text = read_text(base / rel);
    if (blank(text)) continue;
    std::string id = rel;
    if (strip_gz && id.ends_with(".gz")) id.resize(id.size() - 3);
    out.push_back({source + "/" + id, source, std::move(text)});
  }
}

}  // namespace

std::vector<Document> extract_linux_doc(const std::string& root) {
  fs::path base = find_glob_dir(root, "usr/share/doc", "linux-doc-", "Documentation");
  auto rels = walk(base, [](const std::string& r) {
    for (const char* s : {".rst.gz", ".txt.gz", ".rst", ".txt"})
      if (r.ends_with(s)) return true;
    return false;
  });
  std::vector<Document> out;
  add_docs(out, base, rels, "linux-doc", true);
  return out;
}

std::vector<Document> extract_python_doc(const std::string& root) {
  fs::path base = find_glob_dir(root, "usr/share/doc", "python3", "html/_sources");
  auto rels = walk(base, [](const std::string& r) {
    return r.ends_with(".rst.txt") || r.ends_with(".rst.txt.gz");
  });
  std::vector<Document> out;
  add_docs(out, base, rels, "python-doc", true);
  return out;
}

std::vector<Document> extract_python_code(const std::string& root) {
  fs::path base = find_glob_dir(root, "usr/lib", "python3.", "");
  auto rels = walk(base, [](const std::string& r) {
    return r.ends_with(".py") && !has_dir(r, {"test", "tests", "idle_test"});
  });
  std::vector<Document> out;
  add_docs(out, base, rels, "python-code", false);
  return out;
}

std::vector<Document> extract_go_code(const std::string& root, uint64_t cap_bytes) {
  fs::path base = find_glob_dir(root, "usr/share", "go-", "src");
  auto rels = walk(base, [](const std::string& r) {
    return r.ends_with(".go") && !r.ends_with("_test.go") && !has_dir(r, {"testdata", "vendor"});
  });
  // Uniform sample under the cap: visit files in hash64(path) order, keep those that fit.
  std::vector<std::pair<uint64_t, std::string>> order;
  for (auto& r : rels) order.push_back({hash64(r.data(), r.size()), r});
  std::sort(order.begin(), order.end());
  std::vector<std::string> keep;
  uint64_t total = 0;
  for (auto& [h, r] : order) {
    uint64_t sz = fs::file_size(base / r);
    if (total + sz > cap_bytes) continue;
    total += sz;
    keep.push_back(r);
  }
  std::sort(keep.begin(), keep.end());
  std::vector<Document> out;
  add_docs(out, base, keep, "go-code", false);
  return out;
}

// dictd index numbers are base64 digits (A-Z a-z 0-9 + /), most significant first.
static uint64_t dictd_b64(const std::string& s, const std::string& where) {
  static const std::string digits =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  uint64_t v = 0;
  OLMO_CHECK(!s.empty(), where, ": empty offset/length field");
  for (char c : s) {
    size_t d = digits.find(c);
    OLMO_CHECK(d != std::string::npos, where, ": bad base64 digit '", c, "'");
    v = v * 64 + d;
  }
  return v;
}

std::vector<Document> extract_gcide(const std::string& root, uint64_t cap_bytes) {
  fs::path dir = fs::path(root) / "usr/share/dictd";
  std::string dict_path = (dir / "gcide.dict.dz").string(), index_path = (dir / "gcide.index").string();
  std::string dict = LineReader(dict_path).read_all();
  // Entries (offset, length) in file order, skipping dictd's 00-* metadata entries.
  std::map<uint64_t, uint64_t> entries;
  LineReader idx(index_path);
  std::string line;
  while (idx.next(line)) {
    if (line.empty()) continue;
    std::string where = cat(index_path, ":", idx.line_number());
    size_t t1 = line.find('\t'), t2 = t1 == std::string::npos ? t1 : line.find('\t', t1 + 1);
    OLMO_CHECK(t2 != std::string::npos, where, ": expected 'word<TAB>offset<TAB>length'");
    std::string word = line.substr(0, t1);
    // dictd metadata entries (00-database-*, 00-gcide-*, 00databaseinfo ...) are not text.
    if (word.rfind("00-", 0) == 0 || word.rfind("00database", 0) == 0) continue;
    uint64_t off = dictd_b64(line.substr(t1 + 1, t2 - t1 - 1), where);
    size_t t3 = line.find('\t', t2 + 1);
    uint64_t len = dictd_b64(line.substr(t2 + 1, t3 == std::string::npos ? t3 : t3 - t2 - 1), where);
    OLMO_CHECK(off + len <= dict.size(), where, ": entry [", off, ", ", off + len,
               ") is past the end of ", dict_path, " (", dict.size(), " bytes)");
    uint64_t& l = entries[off];
    l = std::max(l, len);
  }
  OLMO_CHECK(!entries.empty(), index_path, ": no dictionary entries");
  // Group consecutive entries into ~4 KB documents.
  std::vector<std::string> groups(1);
  for (auto& [off, len] : entries) {
    if (groups.back().size() >= 4096) groups.emplace_back();
    groups.back().append(dict, off, len);
  }
  uint64_t total = 0;
  for (auto& g : groups) total += g.size();
  size_t stride = std::max<uint64_t>(1, (total + cap_bytes - 1) / std::max<uint64_t>(cap_bytes, 1));
  std::vector<Document> out;
  uint64_t kept = 0;
  for (size_t i = 0; i < groups.size(); i += stride) {
    std::string text = std::move(groups[i]);
    g_utf8_fixes += sanitize_utf8(text);
    if (blank(text)) continue;
    if (kept + text.size() > cap_bytes) break;
    kept += text.size();
    char id[32];
    std::snprintf(id, sizeof id, "gcide/%06zu", i);
    out.push_back({id, "gcide", std::move(text)});
  }
  return out;
}

}  // namespace olmo::corpus
