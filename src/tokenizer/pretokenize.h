// Regex pre-tokenisation (the Split step of byte-level BPE) through PCRE2 with UTF, UCP and JIT.
// `\s` / `\S` in the pattern are rewritten to explicit Unicode White_Space classes before
// compiling, because PCRE2's UCP `\s` (Z categories plus some controls) differs from the
// White_Space property that Rust regex (tiktoken) and Oniguruma (HF tokenizers) use: PCRE2 would
// also match U+180E; neither matches U+FEFF. `$` means end of text only (DOLLAR_ENDONLY), as in
// Rust regex.
// Contract: split() returns pieces in text order: the regex matches and, with keep_gaps, the
// bytes between matches (for the cl100k pattern there are none on valid UTF-8, so both
// settings agree there). Invalid UTF-8 bytes are never passed to PCRE2: the text is cut into valid runs, each
// run is matched on its own, and each invalid byte becomes a piece of its own.
// Thread-safe: match data and JIT stack are per thread.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace olmo::tokenizer {

// cl100k_base's pattern, legacy form (HF tokenizer.json of dolma2, tiktoken <= 0.7).
std::string cl100k_pattern();
// Unicode White_Space as a class body (no brackets), PCRE2 syntax.
std::string white_space_class_body();
// Rewrites \s and \S (outside and inside [...]) to explicit White_Space classes. Throws
// olmo::Error for \S inside a class (not expressible as a class body).
std::string expand_space_escapes(std::string_view pattern);

struct Piece {
  uint32_t begin, end;  // byte offsets into the text
};

class Pretokenizer {
 public:
  // keep_gaps: text between matches becomes pieces too (HF Split "Isolated"); false drops it
  // (tiktoken, HF Split "Removed" + invert). Invalid UTF-8 bytes are always kept.
  explicit Pretokenizer(const std::string& pattern, bool keep_gaps = true);  // throws olmo::Error
  ~Pretokenizer();
  Pretokenizer(const Pretokenizer&) = delete;
  Pretokenizer& operator=(const Pretokenizer&) = delete;

  // Appends the pieces of text (offsets relative to text.data()) to out. text < 4 GiB.
  void split(std::string_view text, std::vector<Piece>& out) const;
  const std::string& pattern() const { return pattern_; }

 private:
  void split_valid(const char* base, size_t off, size_t len, std::vector<Piece>& out) const;
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8*
  bool jit_ = false;
  bool keep_gaps_ = true;
};

// Length of the longest valid UTF-8 prefix of s (RFC 3629: no overlongs, no surrogates).
size_t valid_utf8_prefix(std::string_view s);

}  // namespace olmo::tokenizer
