// dolma2 Tokenizer: file loading (.tiktoken rank file or HF tokenizer.json), sha256 check,
// dolma2 special-token layout, and encode/decode on top of Pretokenizer + BpeModel.
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "core/file_io.h"
#include "core/runtime.h"
#include "tokenizer/bpe.h"
#include "tokenizer/pretokenize.h"
#include "core/sha256.h"
#include "tokenizer/tokenizer_json.h"

namespace olmo::tokenizer {
namespace {

std::string base_name(const std::string& path) {
  size_t s = path.find_last_of('/');
  return s == std::string::npos ? path : path.substr(s + 1);
}

int b64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Strict base64 (RFC 4648 alphabet, '=' padding to a multiple of 4). false on any error.
bool b64_decode(std::string_view s, std::string& out) {
  out.clear();
  if (s.empty() || s.size() % 4) return false;
  size_t pad = 0;
  while (pad < 2 && s[s.size() - 1 - pad] == '=') ++pad;
  for (size_t i = 0; i < s.size(); i += 4) {
    uint32_t v = 0;
    for (size_t k = 0; k < 4; ++k) {
      size_t idx = i + k;
      int d;
      if (idx >= s.size() - pad) d = 0;
      else if ((d = b64_value(s[idx])) < 0) return false;
      v = v << 6 | uint32_t(d);
    }
    out += char(v >> 16);
    if (i + 4 < s.size() || pad < 2) out += char(v >> 8 & 0xFF);
    if (i + 4 < s.size() || pad < 1) out += char(v & 0xFF);
  }
  return true;
}

// .tiktoken: "base64 rank\n" per line; ranks must be 0, 1, 2, ... in file order.
std::vector<std::string> read_tiktoken(const std::string& path) {
  std::string data = read_file(path);
  std::vector<std::string> tokens;
  size_t pos = 0, line = 0;
  std::string bytes;
  while (pos < data.size()) {
    size_t nl = data.find('\n', pos);
    if (nl == std::string::npos) nl = data.size();
    std::string_view l(data.data() + pos, nl - pos);
    pos = nl + 1;
    ++line;
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (l.empty()) {
      OLMO_CHECK(pos >= data.size(), path, ":", line, ": empty line");
      continue;
    }
    size_t sp = l.find(' ');
    OLMO_CHECK(sp != std::string_view::npos, path, ":", line, ": expected '<base64> <rank>', got no rank");
    std::string_view tok = l.substr(0, sp), rank = l.substr(sp + 1);
    OLMO_CHECK(b64_decode(tok, bytes), path, ":", line, ": bad base64 '", tok, "'");
    OLMO_CHECK(!rank.empty() && rank.size() <= 9 &&
                   std::all_of(rank.begin(), rank.end(), [](char c) { return c >= '0' && c <= '9'; }),
               path, ":", line, ": rank '", rank, "' is not a non-negative integer");
    size_t r = std::stoul(std::string(rank));
    OLMO_CHECK(r == tokens.size(), path, ":", line, ": rank ", r, " out of order (expected ",
               tokens.size(), "; ranks must be consecutive from 0)");
    tokens.push_back(bytes);
  }
  OLMO_CHECK(!tokens.empty(), path, ": no ranks in file");
  return tokens;
}

bool looks_like_json(const std::string& path) {
  if (path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0) return true;
  MappedFile f(path);
  size_t i = 0;
  while (i < f.size() && std::strchr(" \t\r\n", f.data()[i]) && f.data()[i]) ++i;
  return i < f.size() && f.data()[i] == '{';
}

}  // namespace

const std::vector<std::string>& dolma2_specials() {
  static const std::vector<std::string> s = [] {
    std::vector<std::string> v = {"<|extra_id_0|>", "<|endoftext|>", "<|fim_prefix|>",
                                  "<|fim_middle|>", "<|fim_suffix|>", "|||PHONE_NUMBER|||",
                                  "|||EMAIL_ADDRESS|||", "|||IP_ADDRESS|||", "<|im_start|>",
                                  "<|im_end|>"};
    for (int i = 1; i <= 10; ++i) v.push_back("<|extra_id_" + std::to_string(i) + "|>");
    v.push_back("<|endofprompt|>");
    v.push_back("<|pad|>");
    return v;
  }();
  return s;
}

void verify_sha256(const std::string& path, const std::string& expected_hex) {
  std::string got = sha256_file_hex(path);
  OLMO_CHECK(got == expected_hex, path, ": sha256 is ", got, ", expected ", expected_hex,
             " (corrupt or wrong tokenizer file)");
}

std::string Tokenizer::default_path() {
  return runtime().env_or_default(
      "tokenizer", "OLMO_TOKENIZER",
      std::string(OLMO_SOURCE_DIR) + "/data/tokenizer/cl100k_base.tiktoken");
}

Tokenizer::Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::load(const std::string& path, const TokenizerOptions& opt) {
  OLMO_CHECK(file_exists(path), path, ": tokenizer file not found");
  Tokenizer t;
  t.path_ = path;
  std::string name = base_name(path);
  std::string want = opt.expected_sha256;
  if (want.empty() &&
      (name == "cl100k_base.tiktoken" || name == "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"))
    want = kCl100kSha256;
  if (!want.empty() && want != "none") verify_sha256(path, want);

  if (looks_like_json(path)) {
    HfBpeFile f = read_tokenizer_json(path);
    t.pre_ = std::make_unique<Pretokenizer>(f.pattern, f.keep_gaps);
    t.bpe_ = std::make_unique<BpeModel>(
        BpeModel::from_merges(std::move(f.tokens), f.merges, f.ignore_merges, path));
    for (auto& [s, id] : f.added) t.specials_.emplace_back(s, id);
  } else {
    t.pre_ = std::make_unique<Pretokenizer>(cl100k_pattern(), /*keep_gaps=*/false);
    t.bpe_ = std::make_unique<BpeModel>(BpeModel::from_ranks(read_tiktoken(path), path));
  }
  // dolma2 layout: fill 100256.. with dolma2's specials where the file defines nothing.
  OLMO_CHECK(t.bpe_->size() <= kDolma2FirstSpecial, path, ": ", t.bpe_->size(),
             " BPE tokens overlap dolma2's special ids from ", kDolma2FirstSpecial);
  const auto& d2 = dolma2_specials();
  for (uint32_t k = 0; k < d2.size(); ++k) {
    uint32_t id = kDolma2FirstSpecial + k;
    bool id_used = std::any_of(t.specials_.begin(), t.specials_.end(),
                               [&](auto& s) { return s.second == id; });
    bool str_used = std::any_of(t.specials_.begin(), t.specials_.end(),
                                [&](auto& s) { return s.first == d2[k]; });
    if (!id_used && !str_used) t.specials_.emplace_back(d2[k], id);
  }
  std::sort(t.specials_.begin(), t.specials_.end(),
            [](auto& a, auto& b) { return a.second < b.second; });
  uint32_t max_id = t.bpe_->size() - 1;
  for (size_t i = 0; i < t.specials_.size(); ++i) {
    uint32_t id = t.specials_[i].second;
    OLMO_CHECK(!t.bpe_->is_token(id), path, ": special token '", t.specials_[i].first, "' id ",
               id, " is also a BPE token");
    OLMO_CHECK(i == 0 || t.specials_[i - 1].second != id, path, ": two special tokens with id ", id);
    max_id = std::max(max_id, id);
  }
  t.vocab_size_ = max_id + 1;
  t.eos_id_ = t.special_id("<|endoftext|>");
  t.pad_id_ = t.special_id("<|pad|>");
  OLMO_CHECK(t.eos_id_ != kNoToken, path, ": no <|endoftext|> token");
  OLMO_CHECK(t.pad_id_ != kNoToken, path, ": no <|pad|> token");
  return t;
}

uint32_t Tokenizer::special_id(std::string_view s) const {
  for (auto& [str, id] : specials_)
    if (str == s) return id;
  return kNoToken;
}

void Tokenizer::encode_append(std::string_view text, std::vector<uint32_t>& out) const {
  thread_local std::vector<Piece> pieces;
  pieces.clear();
  pre_->split(text, pieces);
  const auto* p = reinterpret_cast<const uint8_t*>(text.data());
  for (const Piece& pc : pieces) bpe_->encode_piece(p + pc.begin, pc.end - pc.begin, out);
}

std::vector<uint32_t> Tokenizer::encode(std::string_view text) const {
  std::vector<uint32_t> out;
  out.reserve(text.size() / 3 + 4);
  encode_append(text, out);
  return out;
}

std::string Tokenizer::decode(const uint32_t* ids, size_t n) const {
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    uint32_t id = ids[i];
    if (bpe_->is_token(id)) {
      out += bpe_->token_bytes(id);
      continue;
    }
    auto it = std::lower_bound(specials_.begin(), specials_.end(), id,
                               [](auto& s, uint32_t v) { return s.second < v; });
    OLMO_CHECK(it != specials_.end() && it->second == id, "decode: id ", id, " at position ", i,
               id >= vocab_size_ ? cat(" is >= vocab size ", vocab_size_)
                                 : std::string(" is not a token"));
    out += it->first;
  }
  return out;
}

}  // namespace olmo::tokenizer
