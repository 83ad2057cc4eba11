// HF tokenizer.json -> HfBpeFile: validates the pipeline, maps ByteLevel strings to bytes,
// resolves merges to id pairs.
#include "tokenizer/tokenizer_json.h"

#include <nlohmann/json.hpp>

#include <unordered_map>

#include "core/error.h"
#include "core/file_io.h"

namespace olmo::tokenizer {
namespace {

using nlohmann::json;

const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct ByteMap {
  uint32_t fwd[256];
  int inv[512];
  ByteMap() {
    for (int& x : inv) x = -1;
    bool printable[256] = {};
    for (int b = '!'; b <= '~'; ++b) printable[b] = true;
    for (int b = 0xA1; b <= 0xAC; ++b) printable[b] = true;
    for (int b = 0xAE; b <= 0xFF; ++b) printable[b] = true;
    int n = 0;
    for (int b = 0; b < 256; ++b) fwd[b] = printable[b] ? uint32_t(b) : uint32_t(256 + n++);
    for (int b = 0; b < 256; ++b) inv[fwd[b]] = b;
  }
};
const ByteMap& byte_map() {
  static const ByteMap m;
  return m;
}

// ByteLevel string -> bytes; false if a code point is outside the ByteLevel alphabet.
bool bytelevel_to_bytes(const std::string& s, std::string& out) {
  out.clear();
  for (size_t i = 0; i < s.size();) {
    uint8_t c = uint8_t(s[i]);
    uint32_t cp;
    size_t len;
    if (c < 0x80) cp = c, len = 1;
    else if ((c & 0xE0) == 0xC0) cp = c & 0x1F, len = 2;
    else if ((c & 0xF0) == 0xE0) cp = c & 0x0F, len = 3;
    else return false;
    if (i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (uint8_t(s[i + k]) & 0x3F);
    int b = unicode_to_byte(cp);
    if (b < 0) return false;
    out += char(b);
    i += len;
  }
  return true;
}

const json& member(const json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  OLMO_CHECK(it != j.end(), where, ": missing key '", key, "'");
  return *it;
}

}  // namespace

uint32_t byte_to_unicode(uint8_t b) { return byte_map().fwd[b]; }
int unicode_to_byte(uint32_t cp) { return cp < 512 ? byte_map().inv[cp] : -1; }

HfBpeFile read_tokenizer_json(const std::string& path) {
  json j;
  try {
    j = json::parse(read_file(path));
  } catch (const json::exception& e) {
    throw Error(cat(path, ": not valid JSON: ", e.what()));
  }
  OLMO_CHECK(j.is_object(), path, ": top level is not a JSON object");
  HfBpeFile f;

  auto norm = j.find("normalizer");
  OLMO_CHECK(norm == j.end() || norm->is_null(), path,
             ": key 'normalizer' is set; only tokenizers without a normalizer are supported");

  // pre_tokenizer
  const json& pre = member(j, "pre_tokenizer", path);
  auto check_bytelevel = [&](const json& bl, const std::string& key, bool want_regex) {
    OLMO_CHECK(bl.value("type", "") == "ByteLevel", path, ": ", key, " is not ByteLevel");
    OLMO_CHECK(!bl.value("add_prefix_space", false), path, ": ", key,
               ".add_prefix_space=true is not supported");
    OLMO_CHECK(bl.value("use_regex", true) == want_regex, path, ": ", key, ".use_regex must be ",
               want_regex ? "true" : "false", " here");
  };
  OLMO_CHECK(pre.is_object(), path, ": key 'pre_tokenizer' is not an object");
  if (pre.value("type", "") == "ByteLevel") {
    check_bytelevel(pre, "pre_tokenizer", true);
    f.pattern = kGpt2Pattern;
  } else {
    OLMO_CHECK(pre.value("type", "") == "Sequence", path,
               ": pre_tokenizer.type must be Sequence or ByteLevel");
    const json& seq = member(pre, "pretokenizers", path + ": pre_tokenizer");
    OLMO_CHECK(seq.is_array() && seq.size() == 2, path,
               ": pre_tokenizer.pretokenizers must be [Split, ByteLevel]");
    const json& sp = seq[0];
    OLMO_CHECK(sp.value("type", "") == "Split", path, ": pre_tokenizer.pretokenizers[0] is not Split");
    const json& pat = member(sp, "pattern", path + ": pre_tokenizer.pretokenizers[0]");
    OLMO_CHECK(pat.is_object() && pat.contains("Regex") && pat["Regex"].is_string(), path,
               ": pre_tokenizer.pretokenizers[0].pattern must be {\"Regex\": ...}");
    f.pattern = pat["Regex"].get<std::string>();
    std::string beh = sp.value("behavior", "");
    bool inv = sp.value("invert", false);
    if (beh == "Isolated" && !inv) f.keep_gaps = true;
    else if (beh == "Removed" && inv) f.keep_gaps = false;
    else
      throw Error(cat(path, ": pre_tokenizer.pretokenizers[0]: Split behavior '", beh,
                      "' with invert=", inv, " is not supported"));
    check_bytelevel(seq[1], "pre_tokenizer.pretokenizers[1]", false);
  }

  // model
  const json& model = member(j, "model", path);
  OLMO_CHECK(model.value("type", "") == "BPE", path, ": model.type must be BPE");
  OLMO_CHECK(!model.value("byte_fallback", false), path, ": model.byte_fallback is not supported");
  auto nullish = [&](const char* k) { return !model.contains(k) || model[k].is_null() ||
                                             (model[k].is_string() && model[k] == ""); };
  OLMO_CHECK(nullish("continuing_subword_prefix") && nullish("end_of_word_suffix"), path,
             ": model.continuing_subword_prefix / end_of_word_suffix are not supported");
  OLMO_CHECK(!model.contains("dropout") || model["dropout"].is_null(), path,
             ": model.dropout is not supported");
  f.ignore_merges = model.value("ignore_merges", false);

  // added tokens (matched by id; excluded from the BPE vocabulary)
  std::unordered_map<uint32_t, bool> added_ids;
  if (auto at = j.find("added_tokens"); at != j.end() && !at->is_null()) {
    OLMO_CHECK(at->is_array(), path, ": added_tokens is not an array");
    for (size_t i = 0; i < at->size(); ++i) {
      const json& t = (*at)[i];
      OLMO_CHECK(t.is_object() && t.contains("id") && t["id"].is_number_unsigned() &&
                     t.contains("content") && t["content"].is_string(),
                 path, ": added_tokens[", i, "] needs an unsigned 'id' and a string 'content'");
      uint32_t id = t["id"].get<uint32_t>();
      f.added.emplace_back(t["content"].get<std::string>(), id);
      added_ids[id] = true;
    }
  }

  const json& vocab = member(model, "vocab", path + ": model");
  OLMO_CHECK(vocab.is_object(), path, ": model.vocab is not an object");
  std::unordered_map<std::string, uint32_t> str_to_id;
  str_to_id.reserve(vocab.size());
  std::string bytes;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    OLMO_CHECK(it.value().is_number_unsigned(), path, ": model.vocab['", it.key(),
               "'] is not an unsigned id");
    uint32_t id = it.value().get<uint32_t>();
    OLMO_CHECK(id < (1u << 24), path, ": model.vocab['", it.key(), "'] id ", id, " is too large");
    str_to_id[it.key()] = id;
    if (added_ids.count(id)) continue;
    OLMO_CHECK(bytelevel_to_bytes(it.key(), bytes), path, ": model.vocab['", it.key(),
               "'] has a character outside the ByteLevel alphabet");
    if (f.tokens.size() <= id) f.tokens.resize(id + 1);
    OLMO_CHECK(f.tokens[id].empty(), path, ": model.vocab: id ", id, " appears twice");
    f.tokens[id] = bytes;
  }

  const json& merges = member(model, "merges", path + ": model");
  OLMO_CHECK(merges.is_array(), path, ": model.merges is not an array");
  f.merges.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const json& m = merges[i];
    std::string a, b;
    if (m.is_string()) {
      const std::string& s = m.get_ref<const std::string&>();
      size_t sp = s.find(' ');
      OLMO_CHECK(sp != std::string::npos && s.find(' ', sp + 1) == std::string::npos, path,
                 ": model.merges[", i, "] '", s, "' is not 'left right'");
      a = s.substr(0, sp), b = s.substr(sp + 1);
    } else {
      OLMO_CHECK(m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string(), path,
                 ": model.merges[", i, "] is neither 'left right' nor [left, right]");
      a = m[0].get<std::string>(), b = m[1].get<std::string>();
    }
    auto ia = str_to_id.find(a), ib = str_to_id.find(b);
    OLMO_CHECK(ia != str_to_id.end() && ib != str_to_id.end(), path, ": model.merges[", i,
               "] uses a token that is not in model.vocab");
    f.merges.emplace_back(ia->second, ib->second);
  }
  return f;
}

}  // namespace olmo::tokenizer
