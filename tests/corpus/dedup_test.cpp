// Tests of corpus/dedup.h on planted duplicates (word tokens, so no tokenizer is needed): the
// near-duplicate, exact, held-out and held-out-overlap plants are removed (training copy only),
// a dissimilar pair is kept, the fast path equals the slow reference and does not depend on the
// thread count, MinHash estimates track exact Jaccard; write_corpus drops them, reports them in
// dedup_report.jsonl / MANIFEST, keeps every copy of a canary in one shard, and refuses a corpus
// whose every training document is a duplicate without writing anything.
#include "corpus/dedup.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <unistd.h>

#include "core/error.h"
#include "core/file_io.h"
#include "corpus/corpus.h"

namespace fs = std::filesystem;
using namespace olmo::corpus;

namespace {

std::vector<std::string> random_words(std::mt19937_64& rng, size_t n) {
  std::vector<std::string> w(n);
  for (auto& x : w) x = "w" + std::to_string(rng() % 5000);
  return w;
}
std::string join(const std::vector<std::string>& w, size_t b = 0, size_t e = SIZE_MAX) {
  std::string s;
  for (size_t i = b; i < std::min(e, w.size()); ++i) s += (i > b ? " " : "") + w[i];
  return s;
}

// The planted corpus. Held-out H0..H9 then training; names of the plants for the checks.
struct Planted {
  std::vector<std::string> text;
  std::vector<bool> heldout;
  std::map<std::string, size_t> at;  // plant name -> index
  void add(const std::string& t, bool h, const std::string& name = "") {
    if (!name.empty()) at[name] = text.size();
    text.push_back(t);
    heldout.push_back(h);
  }
  std::vector<DedupDoc> docs() const {
    std::vector<DedupDoc> d;
    for (size_t i = 0; i < text.size(); ++i) d.push_back({text[i], bool(heldout[i])});
    return d;
  }
};

Planted planted() {
  std::mt19937_64 rng(7);
  Planted p;
  std::vector<std::vector<std::string>> held, train;
  for (int i = 0; i < 10; ++i) held.push_back(random_words(rng, 300));
  for (int i = 0; i < 10; ++i) p.add(join(held[i]), true, "H" + std::to_string(i));
  for (int i = 0; i < 60; ++i) train.push_back(random_words(rng, 300));
  for (int i = 0; i < 60; ++i) p.add(join(train[i]), false, "T" + std::to_string(i));
  auto edit = [&](std::vector<std::string> w, int k) {  // k substitutions, evenly spread
    for (int j = 0; j < k; ++j) w[size_t(j + 1) * w.size() / size_t(k + 1)] = "edited" + std::to_string(j);
    return w;
  };
  p.add(join(edit(train[5], 1)), false, "near_train");  // J = 275/301 = 0.91 with T5
  p.add(join(edit(held[3], 1)), false, "near_heldout");  // J 0.91 with H3
  std::string ws = "  " + join(train[7]) + " \n";
  for (auto& c : ws) c = (c == ' ' && (&c - ws.data()) % 7 == 0) ? '\t' : c;
  ws[2] = char(std::toupper(ws[2]));
  p.add(ws, false, "exact_train");                       // T7 up to case and whitespace
  p.add(join(held[1]), false, "exact_heldout");
  // H5 split over two long training documents: 168 and 138 of its 288 13-grams, Jaccard ~0.29
  // and ~0.23 (not near), union 100%: the audit would flag H5 until C1 goes.
  auto c1 = held[5];
  c1.resize(180);
  for (auto& w : random_words(rng, 300)) c1.push_back(w);
  std::vector<std::string> c2(held[5].begin() + 150, held[5].end());
  for (auto& w : random_words(rng, 300)) c2.push_back(w);
  p.add(join(c1), false, "overlap_1");
  p.add(join(c2), false, "overlap_2");
  p.add(join(edit(train[9], 12)), false, "far");  // 12 edits: J ~ 0.27 with T9, kept
  p.add("short doc", false, "short");
  p.add("Short  doc", false, "short_exact");
  return p;
}

DedupOptions test_options() {
  DedupOptions o;
  o.sample = 1;  // every 13-gram window (the held-out rule is then exact on this small corpus)
  o.threads = 2;
  return o;
}

std::map<size_t, Removal> by_doc(const DedupResult& r) {
  std::map<size_t, Removal> m;
  for (auto& x : r.removals) m[x.doc] = x;
  return m;
}

void expect_planted_removals(const Planted& p, const DedupResult& r) {
  auto m = by_doc(r);
  auto expect = [&](const std::string& name, const std::string& rule, const std::string& of) {
    size_t i = p.at.at(name);
    ASSERT_TRUE(m.count(i)) << "planted " << name << " (" << rule << " of " << of << ") survived";
    EXPECT_EQ(m[i].rule, rule) << name;
    EXPECT_EQ(m[i].duplicate_of, p.at.at(of)) << name;
  };
  expect("near_train", "near", "T5");
  expect("near_heldout", "near", "H3");
  expect("exact_train", "exact", "T7");
  expect("exact_heldout", "exact", "H1");
  expect("overlap_1", "heldout", "H5");
  expect("short_exact", "exact", "short");
  EXPECT_EQ(m.size(), 6u) << "only the plants go (overlap_2, far and every original stay)";
  for (size_t i = 0; i < p.text.size(); ++i) {
    if (p.heldout[i]) {
      EXPECT_FALSE(r.removed[i]) << "held-out document " << i << " removed";
    }
  }
  EXPECT_FALSE(r.removed[p.at.at("overlap_2")]);
  EXPECT_FALSE(r.removed[p.at.at("far")]);
  EXPECT_EQ(r.exact, 3u);
  EXPECT_EQ(r.near, 2u);
  EXPECT_EQ(r.heldout, 1u);
}

TEST(Dedup, FastPathRemovesEveryPlant) {
  Planted p = planted();
  DedupResult r = dedup(p.docs(), test_options());
  expect_planted_removals(p, r);
  // The share reported is that of H5's windows in overlap_1: 168 / 288.
  EXPECT_NEAR(by_doc(r)[p.at.at("overlap_1")].share, 168.0 / 288.0, 1e-9);
}

TEST(Dedup, ReferenceRemovesEveryPlantAndAgrees) {
  Planted p = planted();
  DedupResult ref = dedup_reference(p.docs(), test_options());
  expect_planted_removals(p, ref);
  DedupResult fast = dedup(p.docs(), test_options());
  EXPECT_EQ(fast.removed, ref.removed);
  // MinHash estimate vs exact Jaccard (275/301) of the near plants: within 4 standard deviations.
  for (auto& [i, x] : by_doc(ref))
    if (x.rule == "near") {
      EXPECT_NEAR(x.jaccard, 275.0 / 301.0, 1e-9);
      EXPECT_NEAR(by_doc(fast)[i].jaccard, x.jaccard, 0.12);
    }
}

TEST(Dedup, SameResultForAnyThreadCount) {
  Planted p = planted();
  DedupOptions o = test_options();
  o.threads = 1;
  DedupResult a = dedup(p.docs(), o);
  o.threads = 4;
  DedupResult b = dedup(p.docs(), o);
  EXPECT_EQ(a.removed, b.removed);
  ASSERT_EQ(a.removals.size(), b.removals.size());
  for (size_t i = 0; i < a.removals.size(); ++i) EXPECT_EQ(a.removals[i].jaccard, b.removals[i].jaccard);
}

TEST(Dedup, RecallOnManyNearDuplicates) {
  // 300 originals, each followed later by a copy with one word changed (J 0.91): all 300 copies
  // must go; P(miss) per pair at these settings is ~1e-4 (LSH) + P(estimate < 0.8).
  std::mt19937_64 rng(11);
  std::vector<std::string> text;
  std::vector<std::vector<std::string>> orig;
  for (int i = 0; i < 300; ++i) orig.push_back(random_words(rng, 300)), text.push_back(join(orig.back()));
  for (int i = 0; i < 300; ++i) {
    orig[i][size_t(rng() % 300)] = "changed";
    text.push_back(join(orig[i]));
  }
  std::vector<DedupDoc> docs;
  for (auto& t : text) docs.push_back({t, false});
  DedupResult r = dedup(docs, test_options());
  EXPECT_EQ(r.near, 300u);
  for (int i = 0; i < 300; ++i) EXPECT_FALSE(r.removed[size_t(i)]) << "the first copy stays";
}

TEST(Dedup, DetectionProbabilityAndOptions) {
  EXPECT_NEAR(lsh_detection_probability(0.8, 20, 5), 0.99964, 1e-5);
  EXPECT_NEAR(lsh_detection_probability(0.5, 20, 5), 0.47, 0.01);
  EXPECT_EQ(normalize_text("  A\tb \n\n C  "), "a b c");
  std::vector<DedupDoc> bad = {{"a", false}, {"b", true}};
  EXPECT_THROW(dedup(bad, DedupOptions{}), olmo::Error);
  DedupOptions o;
  o.bands = 0;
  EXPECT_THROW(dedup({}, o), olmo::Error);
}

struct TempDir {
  fs::path p;
  TempDir() {
    static int n = 0;
    p = fs::temp_directory_path() /
        ("olmo_dedup_test_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    fs::remove_all(p);
  }
  ~TempDir() { fs::remove_all(p); }
};

// Natural documents whose ids all land in train (is_val_id false), and a held-out gcide set.
std::vector<Document> train_docs(const std::vector<std::string>& texts) {
  std::vector<Document> v;
  for (size_t k = 0; v.size() < texts.size(); ++k) {
    std::string id = "doc/" + std::to_string(k);
    if (!is_val_id(id)) v.push_back({id, "linux-doc", texts[v.size()]});
  }
  return v;
}

TEST(Dedup, WriteCorpusDropsReportsAndKeepsCanariesInOneShard) {
  TempDir t;
  std::mt19937_64 rng(3);
  std::vector<std::string> texts;
  for (int i = 0; i < 40; ++i) texts.push_back(join(random_words(rng, 200)));
  std::string gcide = join(random_words(rng, 200));
  texts.push_back(texts[4]);         // exact duplicate of a training doc
  texts.push_back(gcide + " more");  // near-duplicate of the held-out doc
  CorpusOptions opt;
  opt.out_dir = t.p.string();
  opt.dedup.threads = 2;
  auto canaries = make_canaries(1, 2);
  write_corpus(opt, train_docs(texts), {{"gcide/0", "gcide", gcide}}, canaries, {});
  auto m = nlohmann::json::parse(olmo::read_file((t.p / "MANIFEST.json").string()));
  EXPECT_EQ(m["dedup"]["train_docs_before"], 42);
  EXPECT_EQ(m["dedup"]["train_docs_after"], 40);
  EXPECT_EQ(m["dedup"]["removed"]["exact"], 1);
  EXPECT_EQ(m["dedup"]["removed"]["near"], 1);
  std::ifstream rep(t.p / "dedup_report.jsonl");
  std::string line;
  std::set<std::string> rules;
  while (std::getline(rep, line)) {
    auto j = nlohmann::json::parse(line);
    rules.insert(j["rule"].get<std::string>() + ":" + j["duplicate_of_split"].get<std::string>());
  }
  EXPECT_EQ(rules, (std::set<std::string>{"exact:train", "near:val_ood_gcide"}));
  EXPECT_NO_THROW(verify_corpus(t.p.string()));
  // Every copy of a canary in one part file.
  std::map<std::string, std::set<std::string>> parts_of;
  for (auto& e : fs::directory_iterator(t.p / "train")) {
    DocumentReader r(e.path().string());
    Document d;
    while (r.next(d))
      if (d.source == "canary") parts_of[d.text].insert(e.path().filename().string());
  }
  size_t with_copies = 0;
  for (auto& c : canaries) with_copies += c.count > 0;
  EXPECT_EQ(parts_of.size(), with_copies);
  for (auto& [text, parts] : parts_of) EXPECT_EQ(parts.size(), 1u) << text;
}

TEST(Dedup, EveryTrainingDocumentDuplicateIsAClearErrorAndWritesNothing) {
  TempDir t;
  std::string held = "the same text in every document of this corpus, word for word";
  CorpusOptions opt;
  opt.out_dir = t.p.string();
  try {
    write_corpus(opt, train_docs({held, held, "The same text in every  document of this corpus, word for word"}),
                 {{"gcide/0", "gcide", held}}, make_canaries(1, 1), {});
    FAIL() << "expected an error";
  } catch (const olmo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("every one of the 3 training documents is a duplicate"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(t.p)) << "nothing may be written";
}

}  // namespace
