// OLMo token files and their document index (see token_file.h).
#include "corpus/token_file.h"

#include <unistd.h>
#include <zlib.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "corpus/jsonl.h"

namespace olmo::corpus {

static_assert(std::endian::native == std::endian::little,
              "token files are little-endian uint32; add byte swapping for this host");

std::string doc_index_path(const std::string& npy_path) {
  std::string p = npy_path;
  if (p.size() >= 4 && p.compare(p.size() - 4, 4, ".npy") == 0) p.resize(p.size() - 4);
  return p + ".csv.gz";
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string gzip_compress(const std::string& bytes, int level) {
  z_stream z{};
  OLMO_CHECK(deflateInit2(&z, level, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) == Z_OK,
             "deflateInit2 failed");
  std::string out(deflateBound(&z, bytes.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int r = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  OLMO_CHECK(r == Z_STREAM_END, "gzip compression failed");
  return out;
}

// ---- writer --------------------------------------------------------------------------------

TokenFileWriter::TokenFileWriter(const std::string& npy_path, uint32_t vocab_size)
    : path_(npy_path), vocab_(vocab_size), f_(npy_path) {
  buf_.reserve(1 << 20);
}

TokenFileWriter::~TokenFileWriter() = default;  // uncommitted: AtomicFile removes the temporary

void TokenFileWriter::flush_buffer() {
  if (buf_.empty()) return;
  f_.write(buf_.data(), 4 * buf_.size());
  buf_.clear();
}

void TokenFileWriter::add_document(const std::string& id, const uint32_t* tokens, size_t n) {
  OLMO_CHECK(!committed_, path_, ": add_document after commit");
  for (size_t i = 0; i < n; ++i)
    OLMO_CHECK(tokens[i] < vocab_, path_, ": document '", id, "': token id ", tokens[i],
               " at position ", i, " is >= vocab size ", vocab_);
  DocSpan s{tokens_, tokens_ + n, id};
  index_csv_ += cat(s.start, ",", s.end, ",", csv_field(id), "\n");
  index_.push_back(std::move(s));
  tokens_ += n;
  if (buf_.size() + n > buf_.capacity()) flush_buffer();
  if (n > buf_.capacity()) {
    f_.write(tokens, 4 * n);
  } else {
    buf_.insert(buf_.end(), tokens, tokens + n);
  }
}

void TokenFileWriter::commit() {
  OLMO_CHECK(!committed_, path_, ": committed twice");
  flush_buffer();
  // The index first: a token file under its final name always has its index beside it.
  write_file_atomic(doc_index_path(path_), gzip_compress(index_csv_));
  f_.commit();
  committed_ = true;
}

// ---- readers -------------------------------------------------------------------------------

TokenFile::TokenFile(const std::string& path) : map_(path) {
  OLMO_CHECK(map_.size() % 4 == 0, path, ": size ", map_.size(),
             " bytes is not a multiple of 4 (expected headerless uint32 tokens)");
}

void TokenFile::check_ids(uint32_t vocab_size) const {
  const uint32_t* p = data();
  for (size_t i = 0, n = size(); i < n; ++i)
    OLMO_CHECK(p[i] < vocab_size, path(), ": token id ", p[i], " at offset ", i,
               " is >= vocab size ", vocab_size);
}

// Splits one CSV line into fields (RFC 4180 quoting); false on an unterminated quote.
static bool split_csv(const std::string& line, std::vector<std::string>& f) {
  f.assign(1, "");
  bool q = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (q) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') f.back() += '"', ++i;
      else if (c == '"') q = false;
      else f.back() += c;
    } else if (c == '"') {
      q = true;
    } else if (c == ',') {
      f.emplace_back();
    } else if (c != '\r') {
      f.back() += c;
    }
  }
  return !q;
}

static bool parse_u64(const std::string& s, uint64_t& v) {
  if (s.empty() || s.size() > 19) return false;
  v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + uint64_t(c - '0');
  }
  return true;
}

std::vector<DocSpan> read_doc_index(const std::string& path, uint64_t n_tokens) {
  LineReader r(path);
  std::vector<DocSpan> out;
  std::string line;
  std::vector<std::string> f;
  while (r.next(line)) {
    // A quoted id may span lines: keep reading until the quotes balance.
    while (!split_csv(line, f)) {
      std::string more;
      OLMO_CHECK(r.next(more), path, ":", r.line_number(), ": unterminated quoted field");
      line += "\n" + more;
    }
    auto where = [&] { return cat(path, ":", r.line_number(), ": "); };
    OLMO_CHECK(f.size() >= 2, where(), "expected 'start,end[,id]', got '", line, "'");
    DocSpan s;
    OLMO_CHECK(parse_u64(f[0], s.start) && parse_u64(f[1], s.end), where(),
               "start/end are not non-negative integers: '", line, "'");
    OLMO_CHECK(s.start < s.end, where(), "empty or reversed span ", s.start, ",", s.end);
    if (f.size() >= 3) s.id = f[2];
    if (n_tokens) {
      uint64_t expect = out.empty() ? 0 : out.back().end;
      OLMO_CHECK(s.start == expect, where(), "span starts at ", s.start, ", expected ", expect);
      OLMO_CHECK(s.end <= n_tokens, where(), "span end ", s.end, " is past the file's ",
                 n_tokens, " tokens");
    }
    out.push_back(std::move(s));
  }
  if (n_tokens)
    OLMO_CHECK(!out.empty() && out.back().end == n_tokens, path, ": spans cover ",
               out.empty() ? 0 : out.back().end, " of ", n_tokens, " tokens");
  return out;
}

}  // namespace olmo::corpus
