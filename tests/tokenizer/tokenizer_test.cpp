// dolma2 tokenizer unit tests: SHA-256 known answers (FIPS 180-4 examples), cl100k golden ids
// (data_sources.md section 2, from tiktoken/HF), the dolma2 special layout, pre-tokeniser
// White_Space handling, fast BPE against the reference, round trips, threads, HF tokenizer.json
// loading on a hand-built vocabulary, and every bad-file error (file:line in the message).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>
#include <unistd.h>

#include "core/error.h"
#include "core/file_io.h"
#include "tokenizer/bpe.h"
#include "tokenizer/pretokenize.h"
#include "core/sha256.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_json.h"

using namespace olmo::tokenizer;
namespace fs = std::filesystem;

namespace {

const Tokenizer& cl100k() {
  static Tokenizer t = Tokenizer::load(std::string(OLMO_SOURCE_DIR) +
                                       "/data/tokenizer/cl100k_base.tiktoken");
  return t;
}

// Scratch directory for test files, removed at exit.
struct TmpDir {
  fs::path path = fs::temp_directory_path() / ("olmo_tok_test_" + std::to_string(::getpid()));
  TmpDir() { fs::create_directories(path); }
  ~TmpDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};
fs::path tmp_dir() {
  static TmpDir d;
  return d.path;
}

std::string write_tmp(const std::string& name, const std::string& content) {
  std::string p = (tmp_dir() / name).string();
  std::ofstream(p, std::ios::binary) << content;
  return p;
}

std::string b64(const std::string& s) {
  static const char* A = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string o;
  for (size_t i = 0; i < s.size(); i += 3) {
    uint32_t v = uint8_t(s[i]) << 16;
    if (i + 1 < s.size()) v |= uint8_t(s[i + 1]) << 8;
    if (i + 2 < s.size()) v |= uint8_t(s[i + 2]);
    o += A[v >> 18];
    o += A[v >> 12 & 63];
    o += i + 1 < s.size() ? A[v >> 6 & 63] : '=';
    o += i + 2 < s.size() ? A[v & 63] : '=';
  }
  return o;
}

// A small valid rank file: the 256 bytes (rank = byte) then the given extra tokens.
std::string rank_file(const std::vector<std::string>& extra) {
  std::string f;
  int r = 0;
  for (int b = 0; b < 256; ++b) f += b64(std::string(1, char(b))) + " " + std::to_string(r++) + "\n";
  for (auto& t : extra) f += b64(t) + " " + std::to_string(r++) + "\n";
  return f;
}

// Expect load() to throw an olmo::Error whose message contains every part.
void expect_load_error(const std::string& path, std::vector<std::string> parts,
                       const TokenizerOptions& opt = {}) {
  try {
    Tokenizer::load(path, opt);
    FAIL() << "no error for " << path;
  } catch (const olmo::Error& e) {
    for (auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
        << "message '" << e.what() << "' lacks '" << p << "'";
  }
}

std::vector<std::string> pieces(const Pretokenizer& p, const std::string& s) {
  std::vector<Piece> v;
  p.split(s, v);
  std::vector<std::string> o;
  for (auto& x : v) o.push_back(s.substr(x.begin, x.end - x.begin));
  return o;
}

std::string utf8(uint32_t cp) {
  std::string o;
  if (cp < 0x80) o += char(cp);
  else if (cp < 0x800) o += char(0xC0 | cp >> 6), o += char(0x80 | (cp & 63));
  else if (cp < 0x10000)
    o += char(0xE0 | cp >> 12), o += char(0x80 | (cp >> 6 & 63)), o += char(0x80 | (cp & 63));
  else
    o += char(0xF0 | cp >> 18), o += char(0x80 | (cp >> 12 & 63)), o += char(0x80 | (cp >> 6 & 63)),
        o += char(0x80 | (cp & 63));
  return o;
}

// Random text from a mix of ASCII, spaces of every kind, accents, CJK, emoji and joiners.
std::string random_text(std::mt19937& rng, size_t n_chars) {
  static const std::vector<uint32_t> pool = {
      'a', 'b', 'e', 'z', 'A', 'Q', '0', '7', ' ', ' ', ' ', '\n', '\r', '\t', '\'', 's', 'S',
      '.', ',', '<', '|', '>', '_', 0xA0, 0x85, 0xFEFF, 0x180E, 0x2003, 0x3000, 0x200B, 0x200D,
      0xE9, 0x301, 0x4E2D, 0x6587, 0xAC00, 0x1F600, 0x1F3FD, 0x1F1FA, 0x0416, 0x0627, 0x17F};
  std::string s;
  for (size_t i = 0; i < n_chars; ++i) s += utf8(pool[rng() % pool.size()]);
  return s;
}

}  // namespace

TEST(Cl100k, FileHashIsOpenAis) {
  EXPECT_EQ(olmo::sha256_file_hex(cl100k().path()), kCl100kSha256);
}

TEST(Cl100k, GoldenVectors) {
  using V = std::vector<uint32_t>;
  const Tokenizer& t = cl100k();
  EXPECT_EQ(t.encode("Hello world"), (V{9906, 1917}));
  EXPECT_EQ(t.encode("hello world"), (V{15339, 1917}));
  EXPECT_EQ(t.encode(" Hello"), (V{22691}));
  EXPECT_EQ(t.encode("The quick brown fox jumps over the lazy dog."),
            (V{791, 4062, 14198, 39935, 35308, 927, 279, 16053, 5679, 13}));
  EXPECT_EQ(t.encode("   leading spaces and trailing   "), (V{256, 6522, 12908, 323, 28848, 262}));
  EXPECT_EQ(t.encode("line1\nline2\r\nline3\n\n\nend"),
            (V{1074, 16, 198, 1074, 17, 319, 1074, 18, 1432, 408}));
  EXPECT_EQ(t.encode("1234567890 3.14159 1e10 12,345"),
            (V{4513, 10961, 16474, 15, 220, 18, 13, 9335, 2946, 220, 16, 68, 605, 220, 717, 11, 12901}));
  EXPECT_EQ(t.encode("emoji 😀👍🏽 👨‍👩‍👧‍👦 flags 🇺🇸"),
            (V{38623, 91416, 9468, 239, 235, 9468, 237, 121, 62904, 101, 378, 235, 9468, 239, 102,
               378, 235, 9468, 239, 100, 378, 235, 9468, 239, 99, 8202, 11410, 229, 118, 9468, 229, 116}));
  // U+FEFF is not white space (data_sources.md: wasm/js/hf/py agree on these ids).
  EXPECT_EQ(t.encode("a\xEF\xBB\xBF" "b \xEF\xBB\xBF\xEF\xBB\xBF\n\xEF\xBB\xBF"),
            (V{64, 3305, 65, 76880, 62619, 3305}));
  // Specials inside text are plain text.
  EXPECT_EQ(t.encode("<|endoftext|>"), (V{27, 91, 8862, 728, 428, 91, 29}));
  EXPECT_EQ(t.encode(""), V{});
}

TEST(Cl100k, Dolma2Layout) {
  const Tokenizer& t = cl100k();
  EXPECT_EQ(t.vocab_size(), 100278u);
  EXPECT_EQ(t.eos_id(), 100257u);
  EXPECT_EQ(t.pad_id(), 100277u);
  EXPECT_EQ(t.bpe().size(), 100256u);
  const auto& sp = dolma2_specials();
  ASSERT_EQ(sp.size(), 22u);
  EXPECT_EQ(sp[1], "<|endoftext|>");
  EXPECT_EQ(sp[21], "<|pad|>");
  EXPECT_EQ(t.special_id("<|fim_prefix|>"), 100258u);
  EXPECT_EQ(t.special_id("<|endofprompt|>"), 100276u);
  for (uint32_t k = 0; k < sp.size(); ++k) {
    uint32_t id = 100256 + k;
    EXPECT_EQ(t.decode(&id, 1), sp[k]);
  }
  std::vector<uint32_t> ids = {9906, 100257, 1917, 100277};
  EXPECT_EQ(t.decode(ids), "Hello<|endoftext|> world<|pad|>");
}

TEST(Cl100k, DecodeRejectsBadIds) {
  const Tokenizer& t = cl100k();
  for (uint32_t bad : {100278u, 100352u, 0xFFFFFFFFu}) {
    std::vector<uint32_t> ids = {9906, bad};
    try {
      t.decode(ids);
      FAIL() << "no error for id " << bad;
    } catch (const olmo::Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::to_string(bad)), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("position 1"), std::string::npos) << e.what();
    }
  }
}

TEST(Cl100k, RoundTrip) {
  const Tokenizer& t = cl100k();
  std::mt19937 rng(7);
  for (int i = 0; i < 300; ++i) {
    std::string s = random_text(rng, rng() % 200);
    auto ids = t.encode(s);
    for (uint32_t id : ids) ASSERT_LT(id, 100256u);
    ASSERT_EQ(t.decode(ids), s);
  }
  for (int i = 0; i < 100; ++i) {  // arbitrary bytes, invalid UTF-8 included
    std::string s(rng() % 100, '\0');
    for (char& c : s) c = char(rng());
    ASSERT_EQ(t.decode(t.encode(s)), s);
  }
}

TEST(Cl100k, EncodeAppendAppends) {
  const Tokenizer& t = cl100k();
  std::vector<uint32_t> out = {1, 2};
  t.encode_append("Hello world", out);
  EXPECT_EQ(out, (std::vector<uint32_t>{1, 2, 9906, 1917}));
}

TEST(Cl100k, FastBpeMatchesReference) {
  const BpeModel& m = cl100k().bpe();
  std::mt19937 rng(3);
  std::vector<std::string> alphabets = {"ab", "abcdefgh", " \n", "0123456789", "e\xCC\x81",
                                        "\xF0\x9F\x98\x80\xE4\xB8\xAD"};
  std::vector<uint32_t> fast, ref;
  for (int i = 0; i < 400; ++i) {
    const std::string& a = alphabets[i % alphabets.size()];
    size_t n = 2 + rng() % (i < 300 ? 47 : 200);  // both the rescan (<=48) and heap paths
    std::string s;
    for (size_t k = 0; k < n; ++k) s += a[rng() % a.size()];
    fast.clear(), ref.clear();
    m.encode_piece(reinterpret_cast<const uint8_t*>(s.data()), s.size(), fast);
    m.encode_piece_reference(reinterpret_cast<const uint8_t*>(s.data()), s.size(), ref);
    ASSERT_EQ(fast, ref) << "piece '" << s << "'";
  }
}

TEST(Cl100k, LongRuns) {
  const Tokenizer& t = cl100k();
  for (std::string s : {std::string(20000, ' '), std::string(20000, 'a'), std::string(5000, '\n'),
                        std::string(3000, '7')}) {
    auto ids = t.encode(s);
    EXPECT_EQ(t.decode(ids), s);
  }
  std::string emoji;
  for (int i = 0; i < 5000; ++i) emoji += "\xF0\x9F\x98\x80";
  EXPECT_EQ(t.decode(t.encode(emoji)), emoji);
}

TEST(Cl100k, ThreadsAgree) {
  const Tokenizer& t = cl100k();
  std::mt19937 rng(11);
  std::vector<std::string> docs;
  for (int i = 0; i < 64; ++i) docs.push_back(random_text(rng, 2000));
  std::vector<std::vector<uint32_t>> want;
  for (auto& d : docs) want.push_back(t.encode(d));
  std::vector<int> ok(4, 1);
  std::vector<std::thread> th;
  for (int k = 0; k < 4; ++k)
    th.emplace_back([&, k] {
      for (int rep = 0; rep < 3; ++rep)
        for (size_t i = 0; i < docs.size(); ++i)
          if (t.encode(docs[(i + k) % docs.size()]) != want[(i + k) % docs.size()]) ok[k] = 0;
    });
  for (auto& x : th) x.join();
  for (int k = 0; k < 4; ++k) EXPECT_TRUE(ok[k]) << "thread " << k;
}

TEST(Pretokenize, WhiteSpaceIsUnicodeWhiteSpace) {
  Pretokenizer p("\\s+", /*keep_gaps=*/false);
  // Matched: NBSP, NEL, EM SPACE, IDEOGRAPHIC SPACE, LINE SEPARATOR.
  for (uint32_t cp : {0xA0u, 0x85u, 0x2003u, 0x3000u, 0x2028u, 0x0Bu})
    EXPECT_EQ(pieces(p, "a" + utf8(cp) + "b"), std::vector<std::string>{utf8(cp)}) << std::hex << cp;
  // Not White_Space: U+FEFF (BOM), U+180E (PCRE2's UCP \s would match it), U+200B, U+001C.
  for (uint32_t cp : {0xFEFFu, 0x180Eu, 0x200Bu, 0x1Cu})
    EXPECT_TRUE(pieces(p, "a" + utf8(cp) + "b").empty()) << std::hex << cp;
  Pretokenizer q("\\S+", false);
  EXPECT_EQ(pieces(q, "a" + utf8(0xFEFF) + " b"),
            (std::vector<std::string>{"a" + utf8(0xFEFF), "b"}));
  EXPECT_EQ(expand_space_escapes("[^\\s\\p{L}]\\s\\\\s"),
            "[^" + white_space_class_body() + "\\p{L}][" + white_space_class_body() + "]\\\\s");
  EXPECT_THROW(expand_space_escapes("[\\S]"), olmo::Error);
  EXPECT_THROW(Pretokenizer("(unclosed"), olmo::Error);
}

TEST(Pretokenize, Cl100kSplits) {
  Pretokenizer p(cl100k_pattern(), false);
  using S = std::vector<std::string>;
  EXPECT_EQ(pieces(p, "He'S I'M you'll"), (S{"He", "'S", " I", "'M", " you", "'ll"}));
  EXPECT_EQ(pieces(p, "1234567"), (S{"123", "456", "7"}));
  EXPECT_EQ(pieces(p, "a  \n  "), (S{"a", "  \n", "  "}));  // legacy form's trailing split
  EXPECT_EQ(pieces(p, "x   y"), (S{"x", "  ", " y"}));
  EXPECT_EQ(pieces(p, "foo();\r\n\tbar"), (S{"foo", "();\r\n", "\tbar"}));  // tab may lead letters
  EXPECT_EQ(pieces(p, "ab\xFF" "cd"), (S{"ab", "\xFF", "cd"}));  // invalid byte: own piece
  EXPECT_EQ(valid_utf8_prefix("ab\xC0\x80"), 2u);                 // overlong
  EXPECT_EQ(valid_utf8_prefix("\xED\xA0\x80"), 0u);               // surrogate
  EXPECT_EQ(valid_utf8_prefix("\xF0\x9F\x98\x80"), 4u);
}

TEST(TiktokenFile, SmallFileLoads) {
  std::string p = write_tmp("small.tiktoken", rank_file({"ab", "abc", "  "}));
  Tokenizer t = Tokenizer::load(p);
  EXPECT_EQ(t.bpe().size(), 259u);
  EXPECT_EQ(t.vocab_size(), 100278u);
  EXPECT_EQ(t.encode("abcab"), (std::vector<uint32_t>{257, 256}));
  // ids between the file's ranks and 100256 are not tokens
  uint32_t hole = 300;
  EXPECT_THROW(t.decode(&hole, 1), olmo::Error);
}

TEST(TiktokenFile, BrokenFilesNameFileAndLine) {
  std::string good = rank_file({"ab"});
  auto lines = [&](int upto) {  // first `upto` lines of good
    size_t pos = 0;
    for (int i = 0; i < upto; ++i) pos = good.find('\n', pos) + 1;
    return good.substr(0, pos);
  };
  std::string p;
  p = write_tmp("bad_b64.tiktoken", lines(99) + "!!!! 99\n");
  expect_load_error(p, {p + ":100:", "base64"});
  p = write_tmp("bad_pad.tiktoken", lines(5) + "YQ= 5\n");
  expect_load_error(p, {p + ":6:", "base64"});
  p = write_tmp("no_rank.tiktoken", lines(3) + "YQ==\n");
  expect_load_error(p, {p + ":4:", "no rank"});
  p = write_tmp("bad_rank.tiktoken", lines(3) + "YQ== x3\n");
  expect_load_error(p, {p + ":4:", "rank 'x3'"});
  p = write_tmp("gap_rank.tiktoken", lines(4) + b64("zz") + " 5\n");
  expect_load_error(p, {p + ":5:", "rank 5", "consecutive"});
  p = write_tmp("dup.tiktoken", good + b64("ab") + " 257\n");
  expect_load_error(p, {p, "same bytes"});
  p = write_tmp("empty_line.tiktoken", lines(2) + "\n" + good.substr(lines(2).size()));
  expect_load_error(p, {p + ":3:", "empty line"});
  std::string no_zero;  // bytes 1..255 only
  for (int b = 1; b < 256; ++b) no_zero += b64(std::string(1, char(b))) + " " + std::to_string(b - 1) + "\n";
  p = write_tmp("no_zero.tiktoken", no_zero);
  expect_load_error(p, {p, "single byte 0x0"});
  p = write_tmp("empty.tiktoken", "");
  expect_load_error(p, {p, "no ranks"});
  expect_load_error((tmp_dir() / "missing.tiktoken").string(), {"missing.tiktoken", "not found"});
}

TEST(TiktokenFile, HashChecks) {
  // A file named like OpenAI's is checked against the published hash.
  fs::create_directories(tmp_dir() / "h");
  std::string p = write_tmp("h/cl100k_base.tiktoken", rank_file({"ab"}));
  expect_load_error(p, {p, "sha256", kCl100kSha256});
  TokenizerOptions none;
  none.expected_sha256 = "none";
  EXPECT_NO_THROW(Tokenizer::load(p, none));
  TokenizerOptions exact;
  exact.expected_sha256 = olmo::sha256_file_hex(p);
  EXPECT_NO_THROW(Tokenizer::load(p, exact));
  std::string q = write_tmp("other.tiktoken", rank_file({"ab"}));
  TokenizerOptions wrong;
  wrong.expected_sha256 = std::string(64, '0');
  expect_load_error(q, {q, "sha256", std::string(64, '0')}, wrong);
  // The real file with one byte flipped.
  std::string real = olmo::read_file(cl100k().path());
  real[1000] ^= 1;
  std::string r = write_tmp("h/9b5ad71b2ce5302211f9c61530b329a4922fc6a4", real);
  expect_load_error(r, {r, "sha256"});
}

TEST(TiktokenFile, DefaultPathHonoursEnv) {
  ::setenv("OLMO_TOKENIZER", "/some/where.tiktoken", 1);
  EXPECT_EQ(Tokenizer::default_path(), "/some/where.tiktoken");
  ::unsetenv("OLMO_TOKENIZER");
  EXPECT_EQ(Tokenizer::default_path(), std::string(OLMO_SOURCE_DIR) + "/data/tokenizer/cl100k_base.tiktoken");
}

namespace {

// ByteLevel string of raw bytes.
std::string bl(const std::string& bytes) {
  std::string o;
  for (unsigned char c : bytes) o += utf8(byte_to_unicode(c));
  return o;
}

nlohmann::json small_hf(bool ignore_merges) {
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) vocab[bl(std::string(1, char(b)))] = b;
  vocab[bl("ab")] = 256;
  vocab[bl("abc")] = 257;
  vocab[bl("xyz")] = 258;  // no merge produces it
  vocab[bl(" a")] = 259;
  nlohmann::json j = {
      {"version", "1.0"},
      {"added_tokens", {{{"id", 100257}, {"content", "<|endoftext|>"}, {"special", true}},
                        {{"id", 300}, {"content", "<|pad|>"}, {"special", true}}}},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"}, {"pattern", {{"Regex", cl100k_pattern()}}}, {"behavior", "Isolated"},
           {"invert", false}},
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true},
           {"use_regex", false}}}}}},
      {"model",
       {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr},
        {"continuing_subword_prefix", nullptr}, {"end_of_word_suffix", nullptr},
        {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", ignore_merges},
        {"vocab", vocab},
        {"merges", {bl("a") + " " + bl("b"), nlohmann::json::array({bl("ab"), bl("c")}),
                    bl(" ") + " " + bl("a")}}}}};
  return j;
}

}  // namespace

TEST(HfJson, ByteLevelAlphabet) {
  EXPECT_EQ(byte_to_unicode('!'), uint32_t('!'));
  EXPECT_EQ(byte_to_unicode(' '), 0x120u);   // 'Ġ'
  EXPECT_EQ(byte_to_unicode('\n'), 0x10Au);  // 'Ċ'
  EXPECT_EQ(byte_to_unicode(0xAD), 0x143u);  // 'Ń'
  EXPECT_EQ(byte_to_unicode(0xFF), 0xFFu);
  for (int b = 0; b < 256; ++b) EXPECT_EQ(unicode_to_byte(byte_to_unicode(uint8_t(b))), b);
}

TEST(HfJson, SmallTokenizerEncodes) {
  std::string p = write_tmp("small.json", small_hf(false).dump());
  Tokenizer t = Tokenizer::load(p);
  using V = std::vector<uint32_t>;
  // "abcab a": pieces "abcab", " a"; a+b merges first (prio 0) at both places, then ab+c.
  EXPECT_EQ(t.encode("abcab a"), (V{257, 256, 259}));
  EXPECT_EQ(t.encode("xyz"), (V{'x', 'y', 'z'}));  // no merges reach xyz
  EXPECT_EQ(t.eos_id(), 100257u);
  EXPECT_EQ(t.pad_id(), 300u);  // the file's <|pad|> wins over the dolma2 default
  EXPECT_EQ(t.special_id("<|endofprompt|>"), 100276u);  // other dolma2 specials filled in
  EXPECT_EQ(t.vocab_size(), 100277u);  // so the highest id is 100276
  std::string p2 = write_tmp("small_ignore.json", small_hf(true).dump());
  Tokenizer t2 = Tokenizer::load(p2);
  EXPECT_EQ(t2.encode("xyz"), (V{258}));  // ignore_merges: whole-word lookup first
  uint32_t eos = 100257;
  EXPECT_EQ(t2.decode(&eos, 1), "<|endoftext|>");
}

TEST(HfJson, BrokenFilesNameFileAndKey) {
  std::string p = write_tmp("broken1.json", "{\"model\": ");
  expect_load_error(p, {p, "not valid JSON"});
  auto j = small_hf(false);
  j["model"]["type"] = "WordPiece";
  p = write_tmp("broken2.json", j.dump());
  expect_load_error(p, {p, "model.type"});
  j = small_hf(false);
  j["normalizer"] = {{"type", "NFC"}};
  p = write_tmp("broken3.json", j.dump());
  expect_load_error(p, {p, "normalizer"});
  j = small_hf(false);
  j["model"]["merges"].push_back("nope " + bl("a"));
  p = write_tmp("broken4.json", j.dump());
  expect_load_error(p, {p, "model.merges[3]"});
  j = small_hf(false);
  j["model"]["vocab"]["\xE4\xB8\xAD"] = 260;
  p = write_tmp("broken5.json", j.dump());
  expect_load_error(p, {p, "ByteLevel alphabet"});
  j = small_hf(false);
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  p = write_tmp("broken6.json", j.dump());
  expect_load_error(p, {p, "pre_tokenizer"});
  j = small_hf(false);
  j["model"]["merges"].push_back(bl("x") + " " + bl("y"));  // "xy" is not in the vocab
  p = write_tmp("broken7.json", j.dump());
  expect_load_error(p, {p, "merge 3"});
  j = small_hf(false);
  j["model"].erase("vocab");
  p = write_tmp("broken8.json", j.dump());
  expect_load_error(p, {p, "'vocab'"});
}
