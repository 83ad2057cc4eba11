// Corpus assembly (see corpus.h): held-out split, canaries, deterministic train shards,
// canaries.json, MANIFEST.json; build_corpus() drives fetch -> unpack -> extract -> write.
#include "corpus/corpus.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <set>

#include "core/error.h"
#include "core/file_io.h"
#include "core/hash.h"
#include "core/timer.h"
#include "core/sha256.h"
#include "tokenizer/tokenizer.h"

namespace olmo::corpus {
namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

bool is_val_id(const std::string& id) { return hash64(id.data(), id.size(), 0) % 100 == 0; }

// Unbiased draw in [0, n) from a 64-bit engine (rejection sampling; engine output is fixed by the
// C++ standard for mt19937_64, so the result is the same on every platform).
static uint64_t draw_below(std::mt19937_64& rng, uint64_t n) {
  uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do x = rng();
  while (x >= limit);
  return x % n;
}

std::vector<Canary> make_canaries(uint64_t seed, int per_count) {
  std::mt19937_64 rng(seed);
  std::vector<Canary> out;
  std::set<std::string> seen;
  for (int count : {0, 1, 4, 16, 64}) {
    for (int k = 0; k < per_count; ++k) {
      Canary c;
      char name[32];
      std::snprintf(name, sizeof name, "%02d-%d", count, k);
      c.name = name;
      c.count = count;
      c.prefix = "The secret code of canary " + c.name + " is";
      do {
        c.secret.clear();
        for (int d = 0; d < 12; ++d) c.secret += char('0' + draw_below(rng, 10));
      } while (!seen.insert(c.secret).second);
      c.text = c.prefix;
      for (char d : c.secret) c.text += std::string(" ") + d;
      out.push_back(c);
    }
  }
  return out;
}

namespace {

struct FileStat {
  std::string rel;
  uint64_t docs = 0, text_bytes = 0;
};

FileStat write_jsonl(const fs::path& dir, const std::string& rel, const std::vector<Document>& docs,
                     size_t begin, size_t end) {
  JsonlWriter w((dir / rel).string());
  for (size_t i = begin; i < end; ++i) w.write(docs[i]);
  w.close();
  return {rel, w.docs(), w.text_bytes()};
}

ojson file_entry(const fs::path& dir, const FileStat& f) {
  std::string p = (dir / f.rel).string();
  return {{"path", f.rel}, {"sha256", sha256_file_hex(p)}, {"size", file_size(p)},
          {"docs", f.docs}, {"text_bytes", f.text_bytes}};
}

void sort_by_id(std::vector<Document>& v) {
  std::sort(v.begin(), v.end(), [](const Document& a, const Document& b) { return a.id < b.id; });
  for (size_t i = 1; i < v.size(); ++i)
    OLMO_CHECK(v[i].id != v[i - 1].id, "corpus: duplicate document id '", v[i].id, "'");
}

}  // namespace

// Runs dedup over val, ood (held out) and train; drops the removed training documents and
// returns the report lines (JSONL) and the MANIFEST "dedup" section.
static std::pair<std::string, ojson> dedup_train(const CorpusOptions& opt, std::vector<Document>& train,
                                                 const std::vector<Document>& val,
                                                 const std::vector<Document>& ood) {
  ojson m = {{"enabled", opt.dedup.enabled}};
  if (!opt.dedup.enabled) return {"", m};
  std::vector<DedupDoc> dd;
  std::vector<std::pair<const Document*, const char*>> who;
  for (auto& d : val) dd.push_back({d.text, true}), who.push_back({&d, "val_id"});
  for (auto& d : ood) dd.push_back({d.text, true}), who.push_back({&d, "val_ood_gcide"});
  for (auto& d : train) dd.push_back({d.text, false}), who.push_back({&d, "train"});
  DedupResult r = dedup(dd, opt.dedup);
  std::fprintf(stderr,
               "[corpus] dedup: %zu training docs, removed %llu exact + %llu near + %llu held-out "
               "overlap (%.1f s signatures, %.1f s matching)\n",
               train.size(), (unsigned long long)r.exact, (unsigned long long)r.near,
               (unsigned long long)r.heldout, r.seconds_sign, r.seconds_match);
  std::string report;
  for (auto& x : r.removals) {
    ojson line = {{"id", who[x.doc].first->id}, {"source", who[x.doc].first->source},
                  {"rule", x.rule}, {"duplicate_of", who[x.duplicate_of].first->id},
                  {"duplicate_of_split", who[x.duplicate_of].second}};
    if (x.rule == "near") line["jaccard_estimate"] = std::round(x.jaccard * 1000) / 1000;
    if (x.rule == "heldout") line["heldout_share_in_doc"] = std::round(x.share * 1000) / 1000;
    report += line.dump() + "\n";
  }
  const size_t before = train.size(), offset = val.size() + ood.size();
  OLMO_CHECK(r.removals.size() < before, "corpus: every one of the ", before,
             " training documents is a duplicate (", r.exact, " exact, ", r.near, " near, ",
             r.heldout, " overlapping held-out text); nothing written to ", opt.out_dir);
  std::vector<Document> kept;
  kept.reserve(before - r.removals.size());
  for (size_t i = 0; i < before; ++i)
    if (!r.removed[offset + i]) kept.push_back(std::move(train[i]));
  train = std::move(kept);
  m["rules"] = {
      {"exact", "normalised text (ASCII lower case, whitespace runs -> one space) equal to a "
                "held-out or an earlier (by id) training document"},
      {"near", cat("estimated Jaccard of token 13-gram sets >= ", opt.dedup.jaccard, " (MinHash K=",
                   opt.dedup.bands * opt.dedup.rows, ", LSH ", opt.dedup.bands, " bands x ",
                   opt.dedup.rows, " rows: P(candidate | J=0.8) = ",
                   lsh_detection_probability(0.8, opt.dedup.bands, opt.dedup.rows), ")")},
      {"heldout", cat("a held-out document with >= ", opt.dedup.containment,
                      " of its sampled 13-grams (hash % ", opt.dedup.sample,
                      " == 0) in training: the training documents holding most of them go until "
                      "the share is below")}};
  m["tokens"] = opt.dedup.tokenize ? "tokenizer" : "words (no tokenizer given)";
  m["train_docs_before"] = before;
  m["removed"] = {{"exact", r.exact}, {"near", r.near}, {"heldout", r.heldout}};
  m["train_docs_after"] = train.size();
  m["report"] = "dedup_report.jsonl";
  return {report, m};
}

std::string write_corpus(const CorpusOptions& opt, std::vector<Document> natural,
                         std::vector<Document> ood, const std::vector<Canary>& canaries,
                         const std::vector<PackageInfo>& packages) {
  OLMO_CHECK(!natural.empty(), "empty corpus: no training documents were extracted for ",
             opt.out_dir);
  OLMO_CHECK(opt.shards >= 1, "corpus: --shards must be >= 1, got ", opt.shards);
  fs::path dir = opt.out_dir;

  ojson sources = ojson::object();
  auto count_source = [&](const Document& d) {
    auto& s = sources[d.source];
    if (s.is_null()) s = {{"docs", 0}, {"text_bytes", 0}};
    s["docs"] = s["docs"].get<uint64_t>() + 1;
    s["text_bytes"] = s["text_bytes"].get<uint64_t>() + d.text.size();
  };
  std::vector<Document> train, val;
  for (auto& d : natural) {
    count_source(d);
    (is_val_id(d.id) ? val : train).push_back(std::move(d));
  }
  natural.clear();
  for (auto& d : ood) count_source(d);
  sort_by_id(train);
  sort_by_id(val);
  sort_by_id(ood);
  auto [report, dedup_json] = dedup_train(opt, train, val, ood);

  // Nothing is written before this point: a failed dedup leaves the directory as it was.
  fs::create_directories(dir / "train");
  fs::remove(dir / "MANIFEST.json");  // the tree is incomplete until the manifest is rewritten
  std::mt19937_64 rng(opt.seed ^ 0x747261696e6f7264ull);  // "trainord"
  for (size_t i = train.size(); i > 1; --i) std::swap(train[i - 1], train[draw_below(rng, i)]);
  std::vector<std::vector<Document>> shards(size_t(opt.shards));
  for (int s = 0; s < opt.shards; ++s) {
    size_t b = train.size() * size_t(s) / size_t(opt.shards);
    size_t e = train.size() * size_t(s + 1) / size_t(opt.shards);
    shards[s].assign(std::make_move_iterator(train.begin() + b), std::make_move_iterator(train.begin() + e));
  }
  const size_t natural_train_docs = train.size();
  train.clear();
  uint64_t canary_docs = 0;
  for (const auto& c : canaries) {
    auto& part = shards[hash64(c.name.data(), c.name.size(), 0) % uint64_t(opt.shards)];
    for (int j = 0; j < c.count; ++j) {
      char id[64];
      std::snprintf(id, sizeof id, "canary/%s/%02d", c.name.c_str(), j);
      Document d{id, "canary", c.text};
      count_source(d);
      part.insert(part.begin() + std::ptrdiff_t(draw_below(rng, part.size() + 1)), std::move(d));
      ++canary_docs;
    }
  }

  std::vector<FileStat> stats;
  for (int s = 0; s < opt.shards; ++s) {
    char rel[64];
    std::snprintf(rel, sizeof rel, "train/part-%05d.jsonl.zst", s);
    stats.push_back(write_jsonl(dir, rel, shards[s], 0, shards[s].size()));
  }
  static const std::regex part_re(R"(part-(\d{5})\.jsonl\.zst)");
  for (auto& e : fs::directory_iterator(dir / "train")) {
    std::smatch m;
    std::string n = e.path().filename().string();
    if (std::regex_match(n, m, part_re) && std::stoi(m[1].str()) >= opt.shards) fs::remove(e.path());
  }
  stats.push_back(write_jsonl(dir, "val_id.jsonl", val, 0, val.size()));
  stats.push_back(write_jsonl(dir, "val_ood_gcide.jsonl", ood, 0, ood.size()));

  ojson cj = ojson::array();
  for (const auto& c : canaries)
    cj.push_back({{"name", c.name}, {"count", c.count}, {"secret", c.secret},
                  {"prefix", c.prefix}, {"text", c.text}});
  write_file_atomic((dir / "canaries.json").string(), cj.dump(2) + "\n");

  ojson m;
  m["format"] = "olmo-corpus-v1 (Dolma-style JSONL: id, source, text)";
  m["options"] = {{"go_cap_bytes", opt.go_cap_bytes}, {"ood_cap_bytes", opt.ood_cap_bytes},
                  {"shards", opt.shards}, {"seed", opt.seed}};
  m["rules"] = {
      {"val_id", "natural training-source docs with XXH3-64(id, seed 0) % 100 == 0 "
                 "(olmo::hash64); never in train"},
      {"val_ood_gcide", "dict-gcide entries grouped into ~4 KB docs, every k-th kept under "
                        "ood_cap_bytes; no gcide text in train"},
      {"train_order", "sorted by id, deduplicated, Fisher-Yates with "
                      "mt19937_64(seed ^ 0x747261696e6f7264), contiguous shards"},
      {"canaries", "8 per count in {0,1,4,16,64}; each inserted count times as its own train "
                   "doc, all copies in shard XXH3(name) % shards at positions drawn from the "
                   "same engine; count 0 = control"}};
  ojson pk = ojson::array();
  for (auto& p : packages)
    pk.push_back({{"name", p.name}, {"version", p.version}, {"architecture", p.architecture},
                  {"deb", fs::path(p.deb).filename().string()}, {"sha256", p.sha256},
                  {"size", p.size}});
  m["packages"] = pk;
  m["sources"] = sources;
  m["utf8_replacements"] = extraction_utf8_fixes();
  m["dedup"] = dedup_json;
  m["splits"] = {{"train_docs", natural_train_docs + canary_docs}, {"train_canary_docs", canary_docs},
                 {"val_id_docs", val.size()}, {"val_ood_gcide_docs", ood.size()}};
  ojson files = ojson::array();
  for (auto& f : stats) files.push_back(file_entry(dir, f));
  files.push_back(file_entry(dir, {"canaries.json", canaries.size(), 0}));
  if (opt.dedup.enabled) {
    write_file_atomic((dir / "dedup_report.jsonl").string(), report);
    uint64_t lines = uint64_t(std::count(report.begin(), report.end(), '\n'));
    files.push_back(file_entry(dir, {"dedup_report.jsonl", lines, 0}));
  } else {
    fs::remove(dir / "dedup_report.jsonl");
  }
  m["files"] = files;
  std::string text = m.dump(2) + "\n";
  write_file_atomic((dir / "MANIFEST.json").string(), text);
  return text;
}

void build_corpus(const CorpusOptions& opt_in) {
  CorpusOptions opt = opt_in;
  OLMO_CHECK(!opt.out_dir.empty(), "corpus build: no output directory given");
  if (opt.work_dir.empty()) opt.work_dir = (fs::path(opt.out_dir) / ".work").string();
  const double t0 = now_seconds();
  const std::vector<std::string> names = {"linux-doc-6.1",        "python3.11-doc",
                                          "libpython3.11-stdlib", "libpython3.11-minimal",
                                          "golang-1.19-src",      "dict-gcide"};
  auto packages = fetch_packages(names, (fs::path(opt.work_dir) / "debs").string());
  std::fprintf(stderr, "[corpus] %zu packages ready (%.1f s)\n", packages.size(), now_seconds() - t0);
  std::vector<Document> natural, ood;
  for (auto& p : packages) {
    std::string root = (fs::path(opt.work_dir) / "unpack" / p.name).string();
    unpack_deb(p.deb, root);
    std::vector<Document> docs;
    if (p.name == "linux-doc-6.1") docs = extract_linux_doc(root);
    else if (p.name == "python3.11-doc") docs = extract_python_doc(root);
    else if (p.name.rfind("libpython3.11-", 0) == 0) docs = extract_python_code(root);
    else if (p.name == "golang-1.19-src") docs = extract_go_code(root, opt.go_cap_bytes);
    else if (p.name == "dict-gcide") ood = extract_gcide(root, opt.ood_cap_bytes);
    uint64_t bytes = 0;
    for (auto& d : p.name == "dict-gcide" ? ood : docs) bytes += d.text.size();
    std::fprintf(stderr, "[corpus] %-22s %s: %zu docs, %.1f MB (%.1f s)\n", p.name.c_str(),
                 p.version.c_str(), p.name == "dict-gcide" ? ood.size() : docs.size(), bytes / 1e6,
                 now_seconds() - t0);
    for (auto& d : docs) natural.push_back(std::move(d));
    if (!opt.keep_unpacked) fs::remove_all(root);
  }
  auto canaries = make_canaries(opt.seed);
  std::unique_ptr<tokenizer::Tokenizer> tok;
  if (opt.dedup.enabled && !opt.dedup.tokenize) {  // dedup compares the tokens training sees
    std::string path = opt.tokenizer_path.empty() ? tokenizer::Tokenizer::default_path()
                                                  : opt.tokenizer_path;
    tok = std::make_unique<tokenizer::Tokenizer>(tokenizer::Tokenizer::load(path));
    const tokenizer::Tokenizer* t = tok.get();
    opt.dedup.tokenize = [t](std::string_view text, std::vector<uint32_t>& out) {
      t->encode_append(text, out);
    };
  }
  write_corpus(opt, std::move(natural), std::move(ood), canaries, packages);
  std::fprintf(stderr, "[corpus] wrote %s (%.1f s)\n", opt.out_dir.c_str(), now_seconds() - t0);
}

void verify_corpus(const std::string& dir) {
  std::string mpath = (fs::path(dir) / "MANIFEST.json").string();
  OLMO_CHECK(file_exists(mpath), mpath, ": missing (corpus not built, or its build did not finish)");
  nlohmann::json m;
  try {
    m = nlohmann::json::parse(read_file(mpath));
  } catch (const nlohmann::json::exception& e) {
    throw Error(cat(mpath, ": malformed JSON: ", e.what()));
  }
  OLMO_CHECK(m.contains("files") && m["files"].is_array(), mpath, ": no \"files\" array");
  for (auto& f : m["files"]) {
    std::string p = (fs::path(dir) / f.at("path").get<std::string>()).string();
    OLMO_CHECK(file_exists(p), p, ": listed in ", mpath, " but missing");
    OLMO_CHECK(file_size(p) == f.at("size").get<uint64_t>(), p, ": size ", file_size(p),
               " differs from ", mpath, " (", f.at("size").get<uint64_t>(), ")");
    OLMO_CHECK(sha256_file_hex(p) == f.at("sha256").get<std::string>(), p,
               ": sha256 differs from ", mpath);
  }
}

}  // namespace olmo::corpus
