// Tests of corpus/jsonl.h: reading .jsonl / .jsonl.gz / .jsonl.zst produced by the system gzip and
// zstd tools (independent encoders), our writer's output decoded by those tools, malformed lines
// (file:line errors, skip-and-count mode), plain text documents, and UTF-8 repair.
#include "corpus/jsonl.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/file_io.h"

namespace fs = std::filesystem;
using namespace olmo::corpus;

namespace {

struct TempDir {
  fs::path p;
  TempDir() {
    p = fs::temp_directory_path() / ("olmo_jsonl_test_" + std::to_string(::getpid()) + "_" +
                                     std::to_string(rand()));
    fs::create_directories(p);
  }
  ~TempDir() { fs::remove_all(p); }
  std::string operator/(const std::string& n) const { return (p / n).string(); }
};

void write_raw(const std::string& path, const std::string& s) {
  std::ofstream(path, std::ios::binary) << s;
}

int sh(const std::string& cmd) { return std::system(cmd.c_str()); }

const char* kLines =
    "{\"id\": \"a\", \"source\": \"s1\", \"text\": \"hello\\nworld\"}\n"
    "\n"
    "{\"text\": \"no id \\u00e9\", \"extra\": [1, 2]}\n"
    "{\"id\": 17, \"text\": \"numeric id\"}\n"
    "{\"id\": \"last\", \"text\": \"no trailing newline\"}";

void expect_docs(const std::vector<Document>& d, const std::string& path) {
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[0].id, "a");
  EXPECT_EQ(d[0].source, "s1");
  EXPECT_EQ(d[0].text, "hello\nworld");
  EXPECT_EQ(d[1].id, path + ":3");  // missing id -> file:line
  EXPECT_EQ(d[1].text, "no id \xc3\xa9");
  EXPECT_EQ(d[2].id, "17");
  EXPECT_EQ(d[3].text, "no trailing newline");
}

}  // namespace

TEST(Jsonl, ReadsPlainGzipAndZstdFromSystemTools) {
  TempDir t;
  std::string plain = t / "docs.jsonl";
  write_raw(plain, kLines);
  ASSERT_EQ(sh("gzip -c " + plain + " > " + (t / "docs.jsonl.gz")), 0);
  ASSERT_EQ(sh("zstd -q -c " + plain + " > " + (t / "docs.jsonl.zst")), 0);
  for (std::string name : {"docs.jsonl", "docs.jsonl.gz", "docs.jsonl.zst"}) {
    SCOPED_TRACE(name);
    expect_docs(read_documents(t / name), t / name);
  }
}

TEST(Jsonl, ReadsMultiFrameZstdAndConcatenatedGzip) {
  TempDir t;
  write_raw(t / "a.jsonl", "{\"id\":\"1\",\"text\":\"x\"}\n");
  write_raw(t / "b.jsonl", "{\"id\":\"2\",\"text\":\"y\"}\n");
  ASSERT_EQ(sh("cd " + t.p.string() + " && zstd -q -c a.jsonl > c.jsonl.zst && zstd -q -c b.jsonl >> c.jsonl.zst"), 0);
  ASSERT_EQ(sh("cd " + t.p.string() + " && gzip -c a.jsonl > c.jsonl.gz && gzip -c b.jsonl >> c.jsonl.gz"), 0);
  for (std::string name : {"c.jsonl.zst", "c.jsonl.gz"}) {
    auto d = read_documents(t / name);
    ASSERT_EQ(d.size(), 2u) << name;
    EXPECT_EQ(d[1].text, "y");
  }
}

TEST(Jsonl, WriterOutputDecodesWithSystemTools) {
  TempDir t;
  std::vector<Document> docs = {{"x/1", "src", "line one\n\"quoted\"\ttab"},
                                {"x/2", "src", std::string(300000, 'z')},
                                {"x/3", "other", "caf\xc3\xa9 \xe2\x82\xac"}};
  std::string expect;
  for (auto& d : docs) expect += document_to_json_line(d);
  for (std::string name : {"o.jsonl", "o.jsonl.gz", "o.jsonl.zst"}) {
    SCOPED_TRACE(name);
    {
      JsonlWriter w(t / name);
      for (auto& d : docs) w.write(d);
      EXPECT_FALSE(fs::exists(t / name));  // nothing under the final name before close()
      w.close();
    }
    std::string dec = t / (name + ".dec");
    std::string cmd = name.ends_with(".gz")    ? "gzip -dc " + (t / name) + " > " + dec
                      : name.ends_with(".zst") ? "zstd -q -dc " + (t / name) + " > " + dec
                                               : "cp " + (t / name) + " " + dec;
    ASSERT_EQ(sh(cmd), 0);
    EXPECT_EQ(olmo::read_file(dec), expect);
    auto back = read_documents(t / name);
    ASSERT_EQ(back.size(), docs.size());
    for (size_t i = 0; i < docs.size(); ++i) {
      EXPECT_EQ(back[i].id, docs[i].id);
      EXPECT_EQ(back[i].source, docs[i].source);
      EXPECT_EQ(back[i].text, docs[i].text);
    }
  }
}

TEST(Jsonl, WriterWithoutCloseLeavesNothing) {
  TempDir t;
  {
    JsonlWriter w(t / "never.jsonl.zst");
    w.write({"1", "s", "text"});
  }
  EXPECT_TRUE(fs::is_empty(t.p));
}

TEST(Jsonl, MalformedLineErrorNamesFileAndLine) {
  TempDir t;
  std::string p = t / "bad.jsonl.gz";
  write_raw(t / "bad.jsonl",
            "{\"id\":\"1\",\"text\":\"ok\"}\n"
            "{\"id\":\"2\",\"text\":\"ok\"}\n"
            "{\"id\":\"3\",\"text\": oops}\n"
            "{\"id\":\"4\"}\n"
            "[1,2]\n"
            "{\"id\":\"6\",\"text\":5}\n"
            "{\"id\":\"7\",\"text\":\"fine\"}\n");
  ASSERT_EQ(sh("gzip -c " + (t / "bad.jsonl") + " > " + p), 0);
  try {
    read_documents(p);
    FAIL() << "no error";
  } catch (const olmo::Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(p + ":3: malformed JSON"), std::string::npos) << m;
  }
  DocumentReader r(p, JsonlOptions{true});
  std::vector<std::string> ids;
  Document d;
  while (r.next(d)) ids.push_back(d.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"1", "2", "7"}));
  EXPECT_EQ(r.bad_lines(), 4u);
}

TEST(Jsonl, EachKindOfBadLineIsReported) {
  TempDir t;
  struct Case {
    const char* line;
    const char* why;
  } cases[] = {{"{\"id\":\"1\"}", "missing field \"text\""},
               {"[1]", "expected a JSON object"},
               {"{\"text\":[1]}", "\"text\" is not a string"},
               {"{\"id\":[1],\"text\":\"x\"}", "\"id\" is neither"},
               {"{\"text\":\"unterminated", "malformed JSON"}};
  for (auto& c : cases) {
    std::string p = t / "one.jsonl";
    write_raw(p, std::string("{\"text\":\"fine\"}\n") + c.line + "\n");
    try {
      read_documents(p);
      ADD_FAILURE() << "no error for " << c.line;
    } catch (const olmo::Error& e) {
      std::string m = e.what();
      EXPECT_NE(m.find(p + ":2: "), std::string::npos) << m;
      EXPECT_NE(m.find(c.why), std::string::npos) << m;
    }
  }
}

TEST(Jsonl, CorruptOrMissingFilesNameThePath) {
  TempDir t;
  std::string z = t / "trunc.jsonl.zst";
  write_raw(t / "x.jsonl", std::string(100000, ' ') + "{\"text\":\"a\"}\n");
  ASSERT_EQ(sh("zstd -q -c " + (t / "x.jsonl") + " | head -c 20 > " + z), 0);
  write_raw(t / "garbage.jsonl.zst", "this is not zstd at all");
  std::string g = t / "trunc.jsonl.gz";
  ASSERT_EQ(sh("gzip -c " + (t / "x.jsonl") + " | head -c 30 > " + g), 0);
  for (std::string p : {z, g, t / "garbage.jsonl.zst", t / "missing.jsonl"}) {
    try {
      read_documents(p);
      ADD_FAILURE() << "no error for " << p;
    } catch (const olmo::Error& e) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
    }
  }
}

TEST(Jsonl, PlainTextIsOneDocumentPerFile) {
  TempDir t;
  write_raw(t / "notes.txt", "line 1\nline 2\n\n{not json}\n");
  ASSERT_EQ(sh("gzip -c " + (t / "notes.txt") + " > " + (t / "notes.txt.gz")), 0);
  for (std::string name : {"notes.txt", "notes.txt.gz"}) {
    auto d = read_documents(t / name);
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(d[0].id, t / name);
    EXPECT_EQ(d[0].source, "text");
    EXPECT_EQ(d[0].text, "line 1\nline 2\n\n{not json}\n");
  }
  EXPECT_TRUE(is_jsonl_path("a.jsonl.zst"));
  EXPECT_TRUE(is_jsonl_path("a.json.gz"));
  EXPECT_FALSE(is_jsonl_path("a.txt.gz"));
}

TEST(Jsonl, SanitizeUtf8) {
  std::string ok = "plain \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80";
  std::string s = ok;
  EXPECT_EQ(sanitize_utf8(s), 0u);
  EXPECT_EQ(s, ok);
  const std::string r = "\xEF\xBF\xBD";
  struct Case {
    std::string in, out;
    size_t n;
  } cases[] = {{"a\xff" "b", "a" + r + "b", 1},
               {"\xc0\xaf", r + r, 2},                   // overlong '/'
               {"\xed\xa0\x80", r + r + r, 3},           // UTF-16 surrogate
               {"x\xe2\x82", "x" + r + r, 2},            // truncated at end
               {"\xf4\x90\x80\x80", r + r + r + r, 4}};  // > U+10FFFF
  for (auto& c : cases) {
    std::string t = c.in;
    EXPECT_EQ(sanitize_utf8(t), c.n);
    EXPECT_EQ(t, c.out);
  }
}
