// tokenizer.json / tokenizer_config.json writers for a rank-based byte-level BPE (see
// hf_export.h for the format decisions). Cost: one hash lookup per split point of every token
// (~0.6M for cl100k), output ~10 MB of JSON.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <tuple>
#include <unordered_map>

#include "core/error.h"
#include "interop/hf_export.h"

namespace olmo::model {

using nlohmann::json;

namespace {

// GPT-2's bytes_to_unicode: printable Latin-1 bytes map to themselves, the other 68 bytes to
// U+0100.. in byte order. Returns the code point as UTF-8.
const std::string& byte_char(uint8_t b) {
  static const std::vector<std::string> table = [] {
    std::vector<std::string> t(256);
    int extra = 0;
    for (int c = 0; c < 256; ++c) {
      bool printable = (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE;
      uint32_t cp = printable ? uint32_t(c) : uint32_t(256 + extra++);
      std::string s;
      if (cp < 0x80) {
        s += char(cp);
      } else {  // all code points here are < 0x800: two UTF-8 bytes
        s += char(0xC0 | (cp >> 6));
        s += char(0x80 | (cp & 0x3F));
      }
      t[c] = s;
    }
    return t;
  }();
  return table[b];
}

std::string byte_level(std::string_view bytes) {
  std::string s;
  for (char c : bytes) s += byte_char(uint8_t(c));
  return s;
}

json added_token(const std::string& content, uint32_t id) {
  return {{"id", id},          {"content", content}, {"single_word", false}, {"lstrip", false},
          {"rstrip", false},   {"normalized", false}, {"special", true}};
}

}  // namespace

std::string hf_tokenizer_json(const HfTokenizerSpec& t) {
  OLMO_CHECK(!t.tokens.empty(), "tokenizer export: no BPE tokens");
  OLMO_CHECK(!t.pattern.empty(), "tokenizer export: empty pre-tokenisation pattern");
  std::unordered_map<std::string_view, uint32_t> rank;
  rank.reserve(t.tokens.size() * 2);
  json vocab = json::object();
  for (uint32_t id = 0; id < t.tokens.size(); ++id) {
    if (t.tokens[id].empty()) continue;
    bool fresh = rank.emplace(t.tokens[id], id).second;
    OLMO_CHECK(fresh, "tokenizer export: token id ", id, " duplicates id ", rank[t.tokens[id]]);
    vocab[byte_level(t.tokens[id])] = id;
  }
  json merges = json::array();
  std::vector<std::tuple<uint32_t, uint32_t, size_t>> local;  // (rank l, rank r, split)
  for (uint32_t id = 0; id < t.tokens.size(); ++id) {
    std::string_view tok = t.tokens[id];
    if (tok.size() < 2) continue;
    local.clear();
    for (size_t i = 1; i < tok.size(); ++i) {
      auto l = rank.find(tok.substr(0, i)), r = rank.find(tok.substr(i));
      if (l != rank.end() && r != rank.end()) local.emplace_back(l->second, r->second, i);
    }
    std::sort(local.begin(), local.end());
    for (auto& [rl, rr, i] : local)
      merges.push_back({byte_level(tok.substr(0, i)), byte_level(tok.substr(i))});
  }
  json added = json::array();
  auto specials = t.specials;
  std::sort(specials.begin(), specials.end(), [](auto& a, auto& b) { return a.second < b.second; });
  for (auto& [s, id] : specials) {
    OLMO_CHECK(id >= t.tokens.size() || t.tokens[id].empty(), "tokenizer export: special '", s,
               "' id ", id, " is also a BPE token");
    added.push_back(added_token(s, id));
  }

  json j;
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;
  j["added_tokens"] = added;
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"},
         {"pattern", {{"Regex", t.pattern}}},
         {"behavior", "Isolated"},
         {"invert", false}},
        {{"type", "ByteLevel"},
         {"add_prefix_space", false},
         {"trim_offsets", true},
         {"use_regex", false}}}}};
  j["post_processor"] = {{"type", "ByteLevel"},
                         {"add_prefix_space", true},
                         {"trim_offsets", false},
                         {"use_regex", true}};
  j["decoder"] = {{"type", "ByteLevel"},
                  {"add_prefix_space", true},
                  {"trim_offsets", true},
                  {"use_regex", true}};
  j["model"] = {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", nullptr},
                {"continuing_subword_prefix", nullptr},
                {"end_of_word_suffix", nullptr},
                {"fuse_unk", false},
                {"byte_fallback", false},
                {"ignore_merges", true},
                {"vocab", vocab},
                {"merges", merges}};
  return j.dump() + "\n";
}

std::string hf_tokenizer_config_json(const HfTokenizerSpec& t, int64_t model_max_length) {
  auto name_of = [&](int64_t id) -> json {
    if (id < 0) return nullptr;
    for (auto& [s, i] : t.specials)
      if (int64_t(i) == id) return s;
    throw Error(cat("tokenizer export: special id ", id, " is not an added token"));
  };
  json dec = json::object();
  for (auto& [s, id] : t.specials) {
    json a = added_token(s, id);
    a.erase("id");
    dec[std::to_string(id)] = a;
  }
  json j;
  j["tokenizer_class"] = "PreTrainedTokenizerFast";
  j["added_tokens_decoder"] = dec;
  j["bos_token"] = name_of(t.bos_id);
  j["eos_token"] = name_of(t.eos_id);
  j["pad_token"] = name_of(t.pad_id);
  j["unk_token"] = nullptr;
  j["add_bos_token"] = false;
  j["add_eos_token"] = false;
  j["clean_up_tokenization_spaces"] = false;
  j["model_max_length"] = model_max_length;
  return j.dump(2) + "\n";
}

}  // namespace olmo::model
