// Tests of corpus/corpus.h without network: extraction rules on small fake package trees
// (compressed with the system gzip), the held-out split (never overlapping train), canary
// insertion counts and record, deterministic bytes, MANIFEST hashes against `sha256sum`,
// verify_corpus on a corrupted file, and the empty-corpus error.
#include "corpus/corpus.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "core/file_io.h"

namespace fs = std::filesystem;
using namespace olmo::corpus;

namespace {

struct TempDir {
  fs::path p;
  TempDir() {
    static int n = 0;
    p = fs::temp_directory_path() /
        ("olmo_corpus_test_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    fs::remove_all(p);
    fs::create_directories(p);
  }
  ~TempDir() { fs::remove_all(p); }
  std::string operator/(const std::string& n) const { return (p / n).string(); }
};

void put(const fs::path& path, const std::string& text, bool gz = false) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
  if (gz) {
    ASSERT_EQ(std::system(("gzip -n -f " + path.string()).c_str()), 0);
  }
}

std::map<std::string, std::string> by_id(const std::vector<Document>& docs) {
  std::map<std::string, std::string> m;
  for (auto& d : docs) m[d.id] = d.text;
  return m;
}

std::string sha256sum(const std::string& path) {
  std::string out;
  EXPECT_EQ(run_command({"sha256sum", path}, "", &out), 0);
  return out.substr(0, 64);
}

}  // namespace

TEST(CorpusExtract, LinuxDocTakesRstAndTxtOnly) {
  TempDir t;
  fs::path d = t.p / "usr/share/doc/linux-doc-6.1/Documentation";
  put(d / "admin-guide/README.rst", "Linux kernel\n============\n", true);
  put(d / "process/howto.txt", "howto text\n", true);
  put(d / "small.rst", "uncompressed small file\n");
  put(d / "devicetree/bindings/x.yaml", "yaml: skipped\n", true);
  put(d / "blank.rst", "  \n\n", true);
  fs::create_symlink("admin-guide/README.rst.gz", d / "Changes.rst.gz");
  put(t.p / "usr/share/doc/linux-doc-6.1/html/_sources/copy.rst.txt", "html copy, skipped\n");
  auto m = by_id(extract_linux_doc(t.p.string()));
  std::map<std::string, std::string> expect = {
      {"linux-doc/admin-guide/README.rst", "Linux kernel\n============\n"},
      {"linux-doc/process/howto.txt", "howto text\n"},
      {"linux-doc/small.rst", "uncompressed small file\n"}};
  EXPECT_EQ(m, expect);
  EXPECT_THROW(extract_linux_doc((t.p / "nothing").string()), olmo::Error);
}

TEST(CorpusExtract, PythonDocAndCode) {
  TempDir t;
  fs::path s = t.p / "usr/share/doc/python3.11/html/_sources";
  put(s / "library/os.rst.txt", "os --- Miscellaneous operating system interfaces\n");
  put(s / "library/os.html", "<html>skipped</html>");
  auto docs = extract_python_doc(t.p.string());
  ASSERT_EQ(docs.size(), 1u);
  EXPECT_EQ(docs[0].id, "python-doc/library/os.rst.txt");
  EXPECT_EQ(docs[0].source, "python-doc");

  fs::path l = t.p / "usr/lib/python3.11";
  put(l / "os.py", "import abc\n");
  put(l / "json/decoder.py", "class JSONDecoder: pass\n");
  put(l / "test/test_os.py", "skipped\n");
  put(l / "unittest/test/test_case.py", "skipped\n");
  put(l / "idlelib/idle_test/test_x.py", "skipped\n");
  put(l / "lib2to3/tests/data/x.py", "skipped\n");
  put(l / "json/decoder.pyc", "binary");
  fs::create_symlink("/nonexistent/sitecustomize.py", l / "sitecustomize.py");  // dangling
  auto m = by_id(extract_python_code(t.p.string()));
  std::map<std::string, std::string> expect = {{"python-code/json/decoder.py", "class JSONDecoder: pass\n"},
                                               {"python-code/os.py", "import abc\n"}};
  EXPECT_EQ(m, expect);
}

TEST(CorpusExtract, GoSkipsTestsAndHonoursTheCap) {
  TempDir t;
  fs::path s = t.p / "usr/share/go-1.19/src";
  std::set<std::string> keepable;
  for (int i = 0; i < 20; ++i) {
    std::string rel = "pkg" + std::to_string(i) + "/file.go";
    put(s / rel, std::string(100, char('a' + i)));
    keepable.insert("go-code/" + rel);
  }
  put(s / "pkg0/file_test.go", "skipped");
  put(s / "pkg1/testdata/x.go", "skipped");
  put(s / "cmd/vendor/golang.org/x/y.go", "skipped");
  auto all = extract_go_code(t.p.string(), 1'000'000);
  std::set<std::string> ids;
  for (auto& d : all) ids.insert(d.id);
  EXPECT_EQ(ids, keepable);
  auto capped = extract_go_code(t.p.string(), 750);
  size_t bytes = 0;
  for (auto& d : capped) {
    bytes += d.text.size();
    EXPECT_TRUE(keepable.count(d.id));
  }
  EXPECT_EQ(capped.size(), 7u);  // 7 files of 100 bytes fit under 750
  EXPECT_LE(bytes, 750u);
  EXPECT_TRUE(std::is_sorted(capped.begin(), capped.end(),
                             [](auto& a, auto& b) { return a.id < b.id; }));
}

TEST(CorpusExtract, GcideEntriesGroupedAndCapped) {
  TempDir t;
  // dict: a header entry then 300 entries of 100 bytes; index offsets/lengths in dictd base64.
  std::string dict = "00-database-info\n   header, skipped\n";
  std::string index = "00-database-info\tA\t" + std::string(1, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[dict.size()]) + "\n";
  index += "00-gcide-info\tA\tB\n";  // a second metadata alias of the header
  auto b64 = [](uint64_t v) {
    const char* dg = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string s;
    do s.insert(s.begin(), dg[v % 64]), v /= 64;
    while (v);
    return s;
  };
  for (int i = 0; i < 300; ++i) {
    std::string e = "word" + std::to_string(i) + " \\w\\ n.\n   meaning";
    e.resize(99, '.');
    e += "\n";
    index += "word" + std::to_string(i) + "\t" + b64(dict.size()) + "\t" + b64(e.size()) + "\n";
    dict += e;
  }
  fs::path d = t.p / "usr/share/dictd";
  put(d / "gcide.dict", dict, true);
  fs::rename(d / "gcide.dict.gz", d / "gcide.dict.dz");
  put(d / "gcide.index", index);
  auto all = extract_gcide(t.p.string(), 1'000'000);
  std::string joined;
  for (auto& doc : all) {
    EXPECT_EQ(doc.source, "gcide");
    EXPECT_EQ(doc.text.find("00-database"), std::string::npos);
    EXPECT_LE(doc.text.size(), 4096u + 100u);
    joined += doc.text;
  }
  EXPECT_EQ(joined, dict.substr(dict.find("word0 ")));
  EXPECT_EQ(all.size(), 8u);  // 300 entries x 100 B in groups of 41 entries (>= 4096 B)
  auto capped = extract_gcide(t.p.string(), 10000);
  size_t bytes = 0;
  for (auto& doc : capped) bytes += doc.text.size();
  EXPECT_LE(bytes, 10000u);
  EXPECT_GE(capped.size(), 2u);
  EXPECT_EQ(capped[1].id, "gcide/000003");  // every 3rd group (30 KB / 10 KB)
  put(d / "gcide.index", "word\tA\n");
  EXPECT_THROW(extract_gcide(t.p.string(), 10000), olmo::Error);
}

TEST(Corpus, CanariesAreDeterministicTwelveDigitSecrets) {
  auto c = make_canaries(7);
  ASSERT_EQ(c.size(), 40u);
  std::map<int, int> per;
  std::set<std::string> secrets;
  for (auto& k : c) {
    per[k.count]++;
    ASSERT_EQ(k.secret.size(), 12u);
    for (char d : k.secret) EXPECT_TRUE(d >= '0' && d <= '9');
    secrets.insert(k.secret);
    std::string spaced;
    for (char d : k.secret) spaced += std::string(" ") + d;
    EXPECT_EQ(k.text, "The secret code of canary " + k.name + " is" + spaced);
    EXPECT_EQ(k.text.rfind(k.prefix, 0), 0u);
  }
  EXPECT_EQ(secrets.size(), 40u);
  EXPECT_EQ(per, (std::map<int, int>{{0, 8}, {1, 8}, {4, 8}, {16, 8}, {64, 8}}));
  EXPECT_EQ(make_canaries(7)[13].secret, c[13].secret);
  EXPECT_NE(make_canaries(8)[13].secret, c[13].secret);
}

TEST(Corpus, HeldOutFractionIsAboutOnePercent) {
  int n = 0;
  for (int i = 0; i < 100000; ++i) n += is_val_id("src/file" + std::to_string(i));
  EXPECT_GT(n, 800);
  EXPECT_LT(n, 1200);
}

TEST(Corpus, WriteSplitsCanariesManifestAndDeterminism) {
  TempDir t;
  std::vector<Document> natural, ood;
  for (int i = 0; i < 3000; ++i)
    natural.push_back({"src" + std::to_string(i % 3) + "/doc" + std::to_string(i),
                       "src" + std::to_string(i % 3), "text of document " + std::to_string(i)});
  for (int i = 0; i < 5; ++i) ood.push_back({"gcide/" + std::to_string(i), "gcide", "entry"});
  auto canaries = make_canaries(11);
  std::vector<PackageInfo> pk = {{"fake", "1.0", "all", "fake_1.0_all.deb", "00", 1}};
  CorpusOptions o;
  o.out_dir = t / "c1";
  o.shards = 3;
  write_corpus(o, natural, ood, canaries, pk);
  o.out_dir = t / "c2";
  write_corpus(o, natural, ood, canaries, pk);

  // Same inputs, same bytes.
  for (auto& e : fs::recursive_directory_iterator(t.p / "c1")) {
    if (!e.is_regular_file()) continue;
    auto rel = fs::relative(e.path(), t.p / "c1").string();
    EXPECT_EQ(olmo::read_file(e.path().string()), olmo::read_file(t / ("c2/" + rel))) << rel;
  }
  // Splits: val_id = exactly the natural docs with is_val_id, train = the rest + canaries.
  std::vector<Document> train;
  for (int s = 0; s < 3; ++s) {
    auto part = read_documents(t / ("c1/train/part-0000" + std::to_string(s) + ".jsonl.zst"));
    EXPECT_GT(part.size(), 900u);
    train.insert(train.end(), part.begin(), part.end());
  }
  auto val = read_documents(t / "c1/val_id.jsonl");
  auto val_ood = read_documents(t / "c1/val_ood_gcide.jsonl");
  EXPECT_EQ(val_ood.size(), 5u);
  std::set<std::string> train_ids, val_ids;
  std::map<std::string, int> text_count;
  for (auto& d : train) {
    if (d.source == "canary") {
      text_count[d.text]++;
    } else {
      EXPECT_FALSE(is_val_id(d.id)) << d.id;
    }
    EXPECT_TRUE(train_ids.insert(d.id).second) << "duplicate " << d.id;
  }
  for (auto& d : val) {
    EXPECT_TRUE(is_val_id(d.id)) << d.id;
    EXPECT_EQ(train_ids.count(d.id), 0u) << d.id << " in both";
    val_ids.insert(d.id);
    EXPECT_NE(d.source, "canary");
  }
  EXPECT_GT(val.size(), 10u);
  EXPECT_EQ(train_ids.size() + val_ids.size(), 3000u + 8 * (1 + 4 + 16 + 64));
  // Canaries: each inserted exactly `count` times, controls never; canaries.json records them.
  auto cj = nlohmann::json::parse(olmo::read_file(t / "c1/canaries.json"));
  ASSERT_EQ(cj.size(), 40u);
  for (auto& c : cj) {
    std::string text = c["text"];
    EXPECT_EQ(text_count[text], c["count"].get<int>()) << c["name"];
    std::string spaced;
    for (char d : std::string(c["secret"])) spaced += std::string(" ") + d;
    EXPECT_EQ(text, c["prefix"].get<std::string>() + spaced);
  }
  // Train order is shuffled (not sorted by id), so repeated canaries are spread out.
  EXPECT_FALSE(std::is_sorted(train.begin(), train.end(),
                              [](auto& a, auto& b) { return a.id < b.id; }));
  // MANIFEST: hashes and sizes equal sha256sum's and the files'.
  auto m = nlohmann::json::parse(olmo::read_file(t / "c1/MANIFEST.json"));
  EXPECT_EQ(m["packages"][0]["version"], "1.0");
  EXPECT_EQ(m["splits"]["val_id_docs"].get<size_t>(), val.size());
  ASSERT_EQ(m["files"].size(), 3u + 4u);  // 3 train parts, val_id, val_ood, canaries, dedup report
  for (auto& f : m["files"]) {
    std::string p = t / ("c1/" + f["path"].get<std::string>());
    EXPECT_EQ(f["sha256"].get<std::string>(), sha256sum(p)) << p;
    EXPECT_EQ(f["size"].get<uint64_t>(), olmo::file_size(p));
  }
  verify_corpus(t / "c1");
  // Corrupt a shard: verify names it.
  std::ofstream(t / "c1/val_id.jsonl", std::ios::app) << "x";
  try {
    verify_corpus(t / "c1");
    FAIL();
  } catch (const olmo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("val_id.jsonl"), std::string::npos) << e.what();
  }
  // Fewer shards on a rebuild: stale shard files go away.
  o.out_dir = t / "c2";
  o.shards = 1;
  write_corpus(o, natural, ood, canaries, pk);
  EXPECT_FALSE(fs::exists(t / "c2/train/part-00001.jsonl.zst"));
  verify_corpus(t / "c2");
}

TEST(Corpus, EmptyCorpusIsAClearError) {
  TempDir t;
  CorpusOptions o;
  o.out_dir = t / "c";
  try {
    write_corpus(o, {}, {}, make_canaries(1), {});
    FAIL();
  } catch (const olmo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("empty corpus"), std::string::npos) << e.what();
  }
  EXPECT_THROW(verify_corpus(t / "c"), olmo::Error);  // no MANIFEST
}

TEST(Corpus, RunCommandCapturesOutputAndStatus) {
  std::string out;
  EXPECT_EQ(run_command({"sh", "-c", "echo hi; echo err >&2; exit 3"}, "/", &out), 3);
  EXPECT_EQ(out, "hi\nerr\n");
  EXPECT_EQ(run_command({"/nonexistent/binary"}, "", &out), 127);
}
