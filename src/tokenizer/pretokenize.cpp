// PCRE2 pre-tokeniser: pattern rewriting for White_Space, JIT-compiled matching, and the
// UTF-8 validation that keeps invalid bytes away from PCRE2.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pretokenize.h"

#include <pcre2.h>

#include <cstring>

#include "core/error.h"

namespace olmo::tokenizer {

std::string cl100k_pattern() {
  return R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
}

std::string white_space_class_body() {
  // Unicode White_Space property (PropList.txt): 25 code points.
  return R"(\x{9}-\x{D}\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";
}

std::string expand_space_escapes(std::string_view p) {
  const std::string body = white_space_class_body();
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char n = p[++i];
      if (n == 's') {
        out += in_class ? body : "[" + body + "]";
      } else if (n == 'S') {
        OLMO_CHECK(!in_class, "regex '", p, "': \\S inside a character class is not supported");
        out += "[^" + body + "]";
      } else {
        out += c;
        out += n;
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal member.
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];
      continue;
    }
    if (in_class && c == '[' && i + 1 < p.size() && p[i + 1] == ':') {  // [:posix:]
      size_t e = p.find(":]", i + 2);
      OLMO_CHECK(e != std::string_view::npos, "regex '", p, "': unterminated [: class");
      out.append(p.substr(i, e + 2 - i));
      i = e + 1;
      continue;
    }
    if (in_class && c == ']') in_class = false;
    out += c;
  }
  return out;
}

size_t valid_utf8_prefix(std::string_view s) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  size_t n = s.size(), i = 0;
  while (i < n) {
    if (i + 8 <= n) {  // ASCII fast path
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      if (!(w & 0x8080808080808080ull)) {
        i += 8;
        continue;
      }
    }
    uint8_t c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2, cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3, cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4, cp = c & 0x07;
    } else {
      return i;
    }
    if (i + len > n) return i;
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
        (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
      return i;
    i += len;
  }
  return n;
}

namespace {

// Per-thread PCRE2 match state, shared by all patterns (one ovector pair is all we read).
struct MatchState {
  pcre2_match_data* md = nullptr;
  pcre2_match_context* mc = nullptr;
  pcre2_jit_stack* js = nullptr;
  MatchState() {
    md = pcre2_match_data_create(1, nullptr);
    mc = pcre2_match_context_create(nullptr);
    js = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
    if (mc && js) pcre2_jit_stack_assign(mc, nullptr, js);
  }
  ~MatchState() {
    pcre2_jit_stack_free(js);
    pcre2_match_context_free(mc);
    pcre2_match_data_free(md);
  }
};

MatchState& match_state() {
  thread_local MatchState s;
  return s;
}

}  // namespace

Pretokenizer::Pretokenizer(const std::string& pattern, bool keep_gaps)
    : pattern_(pattern), keep_gaps_(keep_gaps) {
  std::string expanded = expand_space_escapes(pattern);
  int err = 0;
  PCRE2_SIZE off = 0;
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(expanded.data()), expanded.size(),
                    PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &err, &off, nullptr);
  if (!code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof(msg));
    throw Error(cat("regex '", pattern, "' at offset ", off, ": ", reinterpret_cast<char*>(msg)));
  }
  int rc = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  jit_ = rc == 0;
  code_ = code;
}

Pretokenizer::~Pretokenizer() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

void Pretokenizer::split_valid(const char* base, size_t off, size_t len,
                               std::vector<Piece>& out) const {
  auto* code = static_cast<pcre2_code*>(code_);
  MatchState& st = match_state();
  auto subj = reinterpret_cast<PCRE2_SPTR>(base + off);
  PCRE2_SIZE* ov = pcre2_get_ovector_pointer(st.md);
  size_t pos = 0;
  while (pos < len) {
    int rc = jit_ ? pcre2_jit_match(code, subj, len, pos, PCRE2_NO_UTF_CHECK, st.md, st.mc)
                  : pcre2_match(code, subj, len, pos, PCRE2_NO_UTF_CHECK, st.md, st.mc);
    if (rc == PCRE2_ERROR_NOMATCH) {
      if (keep_gaps_) out.push_back({uint32_t(off + pos), uint32_t(off + len)});
      return;
    }
    if (rc < 0) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof(msg));
      throw Error(cat("regex match failed at byte ", off + pos, ": ",
                      reinterpret_cast<char*>(msg)));
    }
    size_t b = ov[0], e = ov[1];
    if (e == b) {  // empty match: the next code point becomes part of a gap piece
      e = b + 1;
      while (e < len && (uint8_t(base[off + e]) & 0xC0) == 0x80) ++e;
      if (keep_gaps_) out.push_back({uint32_t(off + pos), uint32_t(off + e)});
      pos = e;
      continue;
    }
    if (b > pos && keep_gaps_) out.push_back({uint32_t(off + pos), uint32_t(off + b)});
    out.push_back({uint32_t(off + b), uint32_t(off + e)});
    pos = e;
  }
}

void Pretokenizer::split(std::string_view text, std::vector<Piece>& out) const {
  OLMO_CHECK(text.size() < (size_t(1) << 32), "pre-tokenizer: text of ", text.size(),
             " bytes is too long (limit 4 GiB)");
  size_t pos = 0;
  while (pos < text.size()) {
    size_t n = valid_utf8_prefix(text.substr(pos));
    if (n) split_valid(text.data(), pos, n, out);
    pos += n;
    if (pos < text.size()) {
      out.push_back({uint32_t(pos), uint32_t(pos + 1)});  // one invalid byte
      ++pos;
    }
  }
}

}  // namespace olmo::tokenizer
