// `olmo corpus build DIR`: the demo pre-training corpus from Debian packages, as Dolma-style
// JSONL ({"id","source","text"}, one document per source file).
//
// Sources (data_sources.md section 1): training text from linux-doc-6.1 (Documentation/**/
// *.rst[.gz], *.txt[.gz]), python3.11-doc (html/_sources/**/*.rst.txt), the Python standard
// library (libpython3.11-stdlib + -minimal, **/*.py outside test/, tests/, idle_test/),
// golang-1.19-src (src/**/*.go minus *_test.go, testdata/, vendor/; a uniform sample by
// hash64(path) capped at go_cap_bytes). Out-of-distribution held-out text from dict-gcide
// (dictionary entries in file order grouped into ~4 KB documents, every k-th group kept so the
// total stays under ood_cap_bytes). Training never sees gcide.
//
// Held-out split rule (in-distribution): a natural document goes to val_id iff
// olmo::hash64(id, seed 0) % 100 == 0 (XXH3-64), else to train. Canaries: 8 secrets (12 random
// digits, space separated; cl100k splits " 4" into " " and "4", so each digit is one token) per
// count in {0, 1, 4, 16, 64}; each
// "The secret code of canary CC-K is d d d ..." is inserted CC times as separate training
// documents (count 0 = never-inserted controls), all recorded in DIR/canaries.json.
//
// Deduplication (dedup.h) runs on the natural documents before the canaries go in: held-out
// documents (val_id, then val_ood_gcide, each sorted by id) come first and are never removed;
// training documents (sorted by id) lose to held-out ones and to earlier training ones. Every
// removal is a line of DIR/dedup_report.jsonl (id, source, rule, duplicate_of, its split,
// estimated Jaccard / held-out share); the counts are in MANIFEST.json "dedup". If no training
// document survives, nothing is written and the error says so.
//
// Outputs: DIR/train/part-0000N.jsonl.zst (documents sorted by id, then shuffled by a seeded
// Fisher-Yates with mt19937_64, cut into `shards` contiguous parts; every copy of one canary goes
// into one part, shard = XXH3(name) % shards, at seeded random positions, so a canary never
// spans two part files), DIR/val_id.jsonl,
// DIR/val_ood_gcide.jsonl, DIR/canaries.json, and DIR/MANIFEST.json (written last: package
// names/versions/.deb sha256, options, per-source counts, every output's sha256/size/doc count).
// Same .debs + options -> same bytes. Invalid UTF-8 in sources becomes U+FFFD (counted).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "corpus/dedup.h"
#include "corpus/jsonl.h"

namespace olmo::corpus {

struct CorpusOptions {
  std::string out_dir;
  std::string work_dir;                    // "" -> out_dir/.work (debs and unpacked trees)
  uint64_t go_cap_bytes = 20'000'000;
  uint64_t ood_cap_bytes = 2'000'000;
  int shards = 4;
  uint64_t seed = 20251202;                // canary secrets and train order
  bool keep_unpacked = false;              // keep WORK/unpack/* after extraction
  DedupOptions dedup;                      // dedup.enabled = false: --no-dedup
  std::string tokenizer_path;              // build_corpus: the tokenizer whose 13-grams dedup
                                           // compares ("" -> Tokenizer::default_path())
};

// ---- extraction from an unpacked package tree (root = dpkg-deb -x target) --------------------
std::vector<Document> extract_linux_doc(const std::string& root);
std::vector<Document> extract_python_doc(const std::string& root);
std::vector<Document> extract_python_code(const std::string& root);
std::vector<Document> extract_go_code(const std::string& root, uint64_t cap_bytes);
std::vector<Document> extract_gcide(const std::string& root, uint64_t cap_bytes);
// Replacements of invalid UTF-8 made by the extractors so far (process-wide counter).
uint64_t extraction_utf8_fixes();

// ---- split, canaries, output -------------------------------------------------------------
bool is_val_id(const std::string& id);

struct Canary {
  std::string name;    // "16-3"
  std::string prefix;  // "The secret code of canary 16-3 is"
  std::string secret;  // 12 digits, e.g. "482915730064"
  std::string text;    // prefix + " 4 8 2 9 ..." : the exact inserted document text
  int count = 0;       // times inserted into train (0: control)
};
std::vector<Canary> make_canaries(uint64_t seed, int per_count = 8);

struct PackageInfo {
  std::string name, version, architecture, deb, sha256;
  uint64_t size = 0;
};

// Writes every output of DIR from already-extracted documents. natural: training-source docs
// (split by is_val_id); ood: the held-out gcide docs. Returns the MANIFEST JSON text.
std::string write_corpus(const CorpusOptions& opt, std::vector<Document> natural,
                         std::vector<Document> ood, const std::vector<Canary>& canaries,
                         const std::vector<PackageInfo>& packages);

// Fetch (apt-get download), unpack (dpkg-deb -x), extract, write. Logs steps to stderr.
void build_corpus(const CorpusOptions& opt);

// Checks DIR/MANIFEST.json against the files (size and sha256); throws naming the first bad one.
void verify_corpus(const std::string& dir);

// ---- subprocess helpers (corpus_fetch.cpp) -------------------------------------------------
// Runs argv (no shell) in cwd, stdout+stderr captured into *output; returns the exit status.
int run_command(const std::vector<std::string>& argv, const std::string& cwd, std::string* output);
// Downloads (if needed) and describes the .debs of `names` into deb_dir.
std::vector<PackageInfo> fetch_packages(const std::vector<std::string>& names,
                                        const std::string& deb_dir);
void unpack_deb(const std::string& deb, const std::string& dest);

}  // namespace olmo::corpus
