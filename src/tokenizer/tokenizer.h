// dolma2 tokenizer (OLMo 2/3): OpenAI cl100k_base byte-level BPE plus dolma2's special tokens.
// Loads an OpenAI `.tiktoken` rank file (one "base64(token) rank" per line, ranks 0..N-1) or a
// Hugging Face `tokenizer.json` (model BPE over ByteLevel, merges); pre-tokenises with cl100k's
// regex through PCRE2 (UTF+UCP+JIT, `\s` = Unicode White_Space, so U+FEFF is not a space).
// dolma2 layout: ranks 0..100255, specials at 100256..100277 (<|endoftext|> = 100257 = eos,
// <|pad|> = 100277 = pad), vocab_size 100278, no BOS.
// Contract: encode() treats special-token strings inside text as plain text and appends no
// EOS/BOS; decode() maps specials back to their strings and throws olmo::Error for ids that are
// not tokens. All const methods are thread-safe (no shared mutable state).
// Cost: encode is O(bytes) for the regex plus O(n log n) BPE per pre-token (n = its bytes);
// common pre-tokens are a single hash lookup.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/token_ids.h"

namespace olmo::tokenizer {

class BpeModel;
class Pretokenizer;

// sha256 of OpenAI's cl100k_base.tiktoken (openai/tiktoken tiktoken_ext/openai_public.py).
inline constexpr const char* kCl100kSha256 =
    "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7";

struct TokenizerOptions {
  // "" (default): check kCl100kSha256 when the file is named cl100k_base.tiktoken (or has
  // tiktoken's cache-key name 9b5ad71b2ce5302211f9c61530b329a4922fc6a4); "none": no check;
  // otherwise the expected lowercase hex sha256 of the file.
  std::string expected_sha256;
};

// Throws olmo::Error "<path>: sha256 is X, expected Y" on mismatch.
void verify_sha256(const std::string& path, const std::string& expected_hex);

class Tokenizer {
 public:
  static Tokenizer load(const std::string& path, const TokenizerOptions& opt = {});
  // $OLMO_TOKENIZER if set, else OLMO_SOURCE_DIR "/data/tokenizer/cl100k_base.tiktoken".
  static std::string default_path();

  std::vector<uint32_t> encode(std::string_view text) const;
  void encode_append(std::string_view text, std::vector<uint32_t>& out) const;
  std::string decode(const uint32_t* ids, size_t n) const;
  std::string decode(const std::vector<uint32_t>& ids) const { return decode(ids.data(), ids.size()); }

  uint32_t eos_id() const { return eos_id_; }      // 100257 for dolma2
  uint32_t pad_id() const { return pad_id_; }      // 100277 for dolma2
  uint32_t vocab_size() const { return vocab_size_; }  // 100278 for dolma2
  // Id of a special token string, or UINT32_MAX when there is none.
  uint32_t special_id(std::string_view s) const;
  const std::string& path() const { return path_; }
  const BpeModel& bpe() const { return *bpe_; }              // for tests and tools
  const Pretokenizer& pretokenizer() const { return *pre_; }

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

 private:
  Tokenizer();
  std::string path_;
  std::unique_ptr<Pretokenizer> pre_;
  std::unique_ptr<BpeModel> bpe_;
  std::vector<std::pair<std::string, uint32_t>> specials_;  // (string, id)
  uint32_t eos_id_ = 0, pad_id_ = 0, vocab_size_ = 0;
};

// The dolma2 special tokens in id order starting at 100256 (olmo3_spec.md section 3).
const std::vector<std::string>& dolma2_specials();

}  // namespace olmo::tokenizer
