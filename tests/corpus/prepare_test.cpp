// Tests of corpus/prepare.h and corpus/token_file.h: byte-identical output for any thread count,
// one EOS after each document, the .csv.gz index against the documents, file roll-over, atomic
// output after failures, bad input (empty corpus, malformed lines, id >= vocab, size % 4), and
// the real dolma2 tokenizer's golden ids (data_sources.md) when its rank file is present.
// Most tests use a byte-level fake encoder (id = byte + 1, EOS 0), whose expected output is
// computed here independently of prepare().
#include "corpus/prepare.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "core/error.h"
#include "core/file_io.h"
#include "corpus/jsonl.h"
#include "corpus/token_file.h"

namespace fs = std::filesystem;
using namespace olmo::corpus;
using namespace olmo::tokenizer;

namespace {

struct TempDir {
  fs::path p;
  TempDir() {
    static int n = 0;
    p = fs::temp_directory_path() /
        ("olmo_prepare_test_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    fs::remove_all(p);
    fs::create_directories(p);
  }
  ~TempDir() { fs::remove_all(p); }
  std::string operator/(const std::string& n) const { return (p / n).string(); }
};

constexpr uint32_t kEos = 0, kVocab = 257;

Encoder byte_encoder() {
  return {[](std::string_view t, std::vector<uint32_t>& out) {
            for (unsigned char c : t) out.push_back(uint32_t(c) + 1);
          },
          kEos, kVocab, "bytes"};
}

std::vector<Document> random_docs(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Document> d;
  for (int i = 0; i < n; ++i) {
    size_t len = 1 + rng() % (i % 17 == 0 ? 3000 : 200);
    std::string text;
    for (size_t k = 0; k < len; ++k) text += char('a' + rng() % 26);
    d.push_back({"doc," + std::to_string(i), "test", text});  // comma: exercises CSV quoting
  }
  return d;
}

void write_jsonl(const std::string& path, const std::vector<Document>& docs) {
  JsonlWriter w(path);
  for (auto& d : docs) w.write(d);
  w.close();
}

std::vector<uint32_t> read_tokens(const std::string& path) {
  TokenFile f(path);
  return std::vector<uint32_t>(f.data(), f.data() + f.size());
}

std::vector<std::string> listing(const fs::path& dir) {
  std::vector<std::string> out;
  for (auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST(Prepare, SameBytesForAnyThreadCountAndCorrectIndex) {
  TempDir t;
  auto a = random_docs(300, 1), b = random_docs(200, 2);
  for (auto& d : b) d.id = "b/" + d.id;
  write_jsonl(t / "a.jsonl.zst", a);
  write_jsonl(t / "b.jsonl.gz", b);
  std::vector<std::string> outs;
  for (int threads : {1, 2, 3}) {
    PrepareOptions o;
    o.out_dir = t / ("out" + std::to_string(threads));
    o.threads = threads;
    o.batch_bytes = 5000;  // many batches
    o.max_tokens_per_file = 20000;
    auto st = prepare({t / "a.jsonl.zst", t / "b.jsonl.gz"}, byte_encoder(), o);
    EXPECT_EQ(st.docs, 500u);
    EXPECT_GT(st.files.size(), 2u);
    outs.push_back(o.out_dir);
  }
  auto names = listing(outs[0]);
  for (size_t k = 1; k < outs.size(); ++k) {
    ASSERT_EQ(listing(outs[k]), names);
    for (auto& n : names)
      EXPECT_EQ(olmo::read_file(outs[k] + "/" + n), olmo::read_file(outs[0] + "/" + n)) << n;
  }
  // Independent expectation: the documents in input order, bytes + 1, then EOS, packed into
  // files that never exceed 20000 tokens, each index contiguous from 0.
  std::vector<Document> all = a;
  all.insert(all.end(), b.begin(), b.end());
  size_t doc = 0;
  uint64_t total = 0;
  for (size_t f = 0; fs::exists(outs[0] + "/" + part_name(f)); ++f) {
    std::string npy = outs[0] + "/" + part_name(f);
    auto toks = read_tokens(npy);
    EXPECT_LE(toks.size(), 20000u);
    auto idx = read_doc_index(doc_index_path(npy), toks.size());
    uint64_t eos_count = std::count(toks.begin(), toks.end(), kEos);
    EXPECT_EQ(eos_count, idx.size());
    for (auto& s : idx) {
      ASSERT_LT(doc, all.size());
      EXPECT_EQ(s.id, all[doc].id);
      const std::string& text = all[doc].text;
      ASSERT_EQ(s.end - s.start, text.size() + 1);
      for (size_t i = 0; i < text.size(); ++i)
        ASSERT_EQ(toks[s.start + i], uint32_t((unsigned char)text[i]) + 1);
      EXPECT_EQ(toks[s.end - 1], kEos);
      ++doc;
    }
    total += toks.size();
  }
  EXPECT_EQ(doc, all.size());
  // The next document would not have fitted: each file is as full as the rule allows.
  auto summary = olmo::read_file(outs[0] + "/prepare.json");
  EXPECT_NE(summary.find("\"tokens\": " + std::to_string(total)), std::string::npos);
}

TEST(Prepare, LongDocumentGetsAFileOfItsOwnAndStalePartsAreRemoved) {
  TempDir t;
  std::vector<Document> d = {{"s1", "", "ab"}, {"big", "", std::string(50, 'x')}, {"s2", "", "cd"}};
  write_jsonl(t / "in.jsonl", d);
  PrepareOptions o;
  o.out_dir = t / "out";
  o.max_tokens_per_file = 10;
  auto st = prepare({t / "in.jsonl"}, byte_encoder(), o);
  ASSERT_EQ(st.files.size(), 3u);
  EXPECT_EQ(read_tokens(st.files[1]).size(), 51u);
  EXPECT_EQ(read_doc_index(doc_index_path(st.files[1]))[0].id, "big");
  o.max_tokens_per_file = 1000;
  st = prepare({t / "in.jsonl"}, byte_encoder(), o);
  EXPECT_EQ(st.files.size(), 1u);
  EXPECT_EQ(listing(t.p / "out"),  // + the audit index (prepare.h; checked in tests/audit)
            (std::vector<std::string>{"docs.bin", "ngrams13.bin", "part-00000.csv.gz",
                                      "part-00000.npy", "prepare.json", "token_counts.bin",
                                      "token_stats.json"}));
}

TEST(Prepare, PlainTextFilesAndDirectories) {
  TempDir t;
  fs::create_directories(t.p / "txt/sub");
  std::ofstream(t / "txt/b.txt") << "second";
  std::ofstream(t / "txt/a.txt") << "first";
  std::ofstream(t / "txt/sub/c.txt") << "third";
  std::ofstream(t / "txt/empty.txt") << "";
  PrepareOptions o;
  o.out_dir = t / "out";
  auto st = prepare({t / "txt"}, byte_encoder(), o);
  EXPECT_EQ(st.docs, 3u);
  EXPECT_EQ(st.empty_docs, 1u);
  auto idx = read_doc_index(doc_index_path(st.files[0]));
  ASSERT_EQ(idx.size(), 3u);
  EXPECT_EQ(idx[0].id, t / "txt/a.txt");  // sorted walk
  EXPECT_EQ(idx[1].id, t / "txt/b.txt");
  EXPECT_EQ(idx[2].id, t / "txt/sub/c.txt");
}

TEST(Prepare, PartPerInputStartsAFileAtEachInput) {
  TempDir t;
  fs::create_directories(t.p / "txt");
  std::ofstream(t / "txt/a.txt") << "first";
  std::ofstream(t / "txt/b.txt") << "second";
  std::ofstream(t / "txt/c.txt") << "";  // last input without documents: no empty part
  PrepareOptions o;
  o.out_dir = t / "out";
  o.part_per_input = true;
  auto st = prepare({t / "txt"}, byte_encoder(), o);
  ASSERT_EQ(st.files.size(), 2u);
  EXPECT_EQ(read_tokens(st.files[0]).size(), 6u);  // "first" + EOS
  EXPECT_EQ(read_tokens(st.files[1]).size(), 7u);
  o.part_per_input = false;
  EXPECT_EQ(prepare({t / "txt"}, byte_encoder(), o).files.size(), 1u);
}

TEST(Prepare, DedupDropsPlantedDuplicatesAndHeldOutCopies) {
  TempDir t;
  auto d = random_docs(40, 5);
  for (auto& x : d) x.text.resize(std::max<size_t>(x.text.size(), 100), 'q');
  std::vector<Document> held = {{"held", "", d[3].text}};
  d[3].text = d[3].text + "!";                       // near copy of the held-out document
  d.push_back({"near", "", d[10].text});
  d.back().text.back() = d.back().text.back() == 'a' ? 'b' : 'a';  // near copy of doc 10
  d.push_back({"exact", "", "  " + d[20].text + "\n"});           // exact up to whitespace
  write_jsonl(t / "in.jsonl", d);
  write_jsonl(t / "held.jsonl", held);
  PrepareOptions o;
  o.out_dir = t / "out";
  o.dedup = true;
  o.dedup_heldout = {t / "held.jsonl"};
  auto st = prepare({t / "in.jsonl"}, byte_encoder(), o);
  EXPECT_EQ(st.dedup_removed, 3u);
  EXPECT_EQ(st.docs, d.size() - 3);
  std::set<std::string> ids;
  for (auto& e : read_doc_index(doc_index_path(st.files[0]))) ids.insert(e.id);
  EXPECT_FALSE(ids.count(d[3].id)) << "the training copy of held-out text survived";
  EXPECT_FALSE(ids.count("near")) << "a planted near-duplicate survived";
  EXPECT_FALSE(ids.count("exact"));
  EXPECT_TRUE(ids.count(d[10].id) && ids.count(d[20].id)) << "the originals stay";
  auto j = nlohmann::json::parse(olmo::read_file(t / "out/prepare.json"));
  EXPECT_EQ(j["dedup"]["removed"]["near"], 2);
  EXPECT_EQ(j["dedup"]["removed"]["exact"], 1);
}

TEST(Prepare, DedupOfAllDuplicateInputIsAClearErrorAndWritesNothing) {
  TempDir t;
  std::string text(300, 'x');
  write_jsonl(t / "in.jsonl", {{"a", "", text}, {"b", "", text}});
  write_jsonl(t / "held.jsonl", {{"h", "", text}});
  PrepareOptions o;
  o.out_dir = t / "out";
  o.dedup = true;
  o.dedup_heldout = {t / "held.jsonl"};
  try {
    prepare({t / "in.jsonl"}, byte_encoder(), o);
    FAIL() << "expected an error";
  } catch (const olmo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("every one of the 2 input documents is a duplicate"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(t / "out")) << "no empty token files may be left behind";
}

TEST(Prepare, EmptyCorpusIsAClearError) {
  TempDir t;
  std::ofstream(t / "empty.jsonl") << "\n{\"id\":\"1\",\"text\":\"\"}\n\n";
  PrepareOptions o;
  o.out_dir = t / "out";
  try {
    prepare({t / "empty.jsonl"}, byte_encoder(), o);
    FAIL() << "no error";
  } catch (const olmo::Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("empty corpus"), std::string::npos) << m;
    EXPECT_NE(m.find(t / "empty.jsonl"), std::string::npos) << m;
  }
  EXPECT_TRUE(fs::is_empty(t.p / "out"));
  EXPECT_THROW(prepare({t / "does-not-exist.jsonl"}, byte_encoder(), o), olmo::Error);
}

TEST(Prepare, MalformedLineStopsWithFileLineOrIsSkippedAndCounted) {
  TempDir t;
  std::ofstream(t / "in.jsonl") << "{\"id\":\"1\",\"text\":\"a\"}\n{broken\n{\"id\":\"3\",\"text\":\"c\"}\n";
  PrepareOptions o;
  o.out_dir = t / "out";
  try {
    prepare({t / "in.jsonl"}, byte_encoder(), o);
    FAIL() << "no error";
  } catch (const olmo::Error& e) {
    EXPECT_NE(std::string(e.what()).find(t / "in.jsonl" + ":2:"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(t / "out/part-00000.npy"));
  o.skip_bad_lines = true;
  auto st = prepare({t / "in.jsonl"}, byte_encoder(), o);
  EXPECT_EQ(st.docs, 2u);
  EXPECT_EQ(st.bad_lines, 1u);
}

TEST(Prepare, FailureLeavesNoPartialFileUnderAFinalName) {
  TempDir t;
  auto docs = random_docs(50, 3);
  docs[40].text = "BOOM";
  write_jsonl(t / "in.jsonl", docs);
  Encoder enc = byte_encoder();
  auto inner = enc.encode_append;
  enc.encode_append = [inner](std::string_view s, std::vector<uint32_t>& out) {
    if (s == "BOOM") throw olmo::Error("tokenizer exploded");
    inner(s, out);
  };
  PrepareOptions o;
  o.out_dir = t / "out";
  o.batch_bytes = 1000;
  o.max_tokens_per_file = 1500;  // some files complete before the failure
  EXPECT_THROW(prepare({t / "in.jsonl"}, enc, o), olmo::Error);
  size_t committed = 0;
  for (auto& n : listing(t.p / "out")) {
    EXPECT_EQ(n.find(".tmp"), std::string::npos) << n;  // no temporary left behind
    EXPECT_NE(n, "prepare.json");
    if (!n.ends_with(".npy")) continue;
    ++committed;
    std::string npy = t / ("out/" + n);
    auto toks = read_tokens(npy);  // every final-named file is complete and consistent
    auto idx = read_doc_index(doc_index_path(npy), toks.size());
    EXPECT_EQ(toks.back(), kEos);
  }
  EXPECT_GE(committed, 1u);
  // The file that was being written when the failure came never appears.
  auto idx_last = read_doc_index(doc_index_path(t / ("out/" + part_name(committed - 1))));
  EXPECT_LT(std::stoi(idx_last.back().id.substr(4)), 40);
  EXPECT_FALSE(fs::exists(t / ("out/" + part_name(committed))));
}

TEST(Prepare, TokenIdAtOrAboveVocabIsRejected) {
  TempDir t;
  std::ofstream(t / "in.jsonl") << "{\"id\":\"d1\",\"text\":\"ok\"}\n";
  Encoder enc = byte_encoder();
  enc.vocab_size = 100;  // 'o' + 1 = 112 >= 100
  PrepareOptions o;
  o.out_dir = t / "out";
  try {
    prepare({t / "in.jsonl"}, enc, o);
    FAIL() << "no error";
  } catch (const olmo::Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("d1"), std::string::npos) << m;
    EXPECT_NE(m.find(">= vocab size 100"), std::string::npos) << m;
  }
  EXPECT_FALSE(fs::exists(t / "out/part-00000.npy"));
}

TEST(TokenFile, BadFilesNameTheFile) {
  TempDir t;
  std::ofstream(t / "odd.npy", std::ios::binary) << "12345";
  try {
    TokenFile f(t / "odd.npy");
    FAIL();
  } catch (const olmo::Error& e) {
    EXPECT_NE(std::string(e.what()).find(t / "odd.npy"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("not a multiple of 4"), std::string::npos);
  }
  uint32_t ids[3] = {1, 5000, 2};
  std::ofstream(t / "ids.npy", std::ios::binary).write(reinterpret_cast<char*>(ids), sizeof ids);
  try {
    TokenFile(t / "ids.npy").check_ids(100);
    FAIL();
  } catch (const olmo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("token id 5000 at offset 1"), std::string::npos) << e.what();
  }
  olmo::write_file_atomic(t / "bad.csv.gz", gzip_compress("0,3,a\n3,x,b\n"));
  try {
    read_doc_index(t / "bad.csv.gz");
    FAIL();
  } catch (const olmo::Error& e) {
    EXPECT_NE(std::string(e.what()).find(t / "bad.csv.gz" + ":2:"), std::string::npos) << e.what();
  }
  olmo::write_file_atomic(t / "gap.csv.gz", gzip_compress("0,3,a\n4,6,b\n"));
  EXPECT_THROW(read_doc_index(t / "gap.csv.gz", 6), olmo::Error);
  // CSV quoting round trip, including an embedded newline.
  olmo::write_file_atomic(t / "q.csv.gz",
                          gzip_compress("0,1," + csv_field("a,\"b\"\nc") + "\n1,2,plain\n"));
  auto q = read_doc_index(t / "q.csv.gz", 2);
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(q[0].id, "a,\"b\"\nc");
  EXPECT_EQ(q[1].id, "plain");
}

TEST(Prepare, RealTokenizerGoldenIdsAndEos) {
  std::string path = Tokenizer::default_path();
  if (!fs::exists(path)) GTEST_SKIP() << path << " missing (scripts/fetch_tokenizer.sh)";
  auto tok = Tokenizer::load(path);
  TempDir t;
  std::ofstream(t / "in.jsonl") << "{\"id\":\"g1\",\"text\":\"Hello world\"}\n"
                                   "{\"id\":\"g2\",\"text\":\"<|endoftext|>\"}\n";
  PrepareOptions o;
  o.out_dir = t / "out";
  o.threads = 2;
  auto st = prepare({t / "in.jsonl"}, encoder_of(tok), o);
  // Golden ids from data_sources.md (tiktoken); special strings in text are plain text.
  std::vector<uint32_t> expect = {9906, 1917, 100257, 27, 91, 8862, 728, 428, 91, 29, 100257};
  EXPECT_EQ(read_tokens(st.files[0]), expect);
  auto idx = read_doc_index(doc_index_path(st.files[0]), expect.size());
  ASSERT_EQ(idx.size(), 2u);
  EXPECT_EQ(idx[0].end, 3u);
  EXPECT_EQ(idx[1].id, "g2");
}
