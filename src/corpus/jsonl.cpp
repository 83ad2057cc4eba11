// JSONL / plain-text document I/O (see jsonl.h): zlib gz streams, zstd streams, nlohmann-json.
#include "corpus/jsonl.h"

#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_io.h"

namespace olmo::corpus {

static bool ends_with(const std::string& s, std::string_view suf) {
  return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}

Compression compression_of(const std::string& path) {
  if (ends_with(path, ".gz") || ends_with(path, ".dz")) return Compression::kGzip;
  if (ends_with(path, ".zst") || ends_with(path, ".zstd")) return Compression::kZstd;
  return Compression::kNone;
}

bool is_jsonl_path(const std::string& path) {
  for (const char* s : {".jsonl", ".jsonl.gz", ".jsonl.zst", ".jsonl.zstd", ".json.gz",
                        ".json.zst", ".json.zstd"})
    if (ends_with(path, s)) return true;
  return false;
}

// ---- UTF-8 repair --------------------------------------------------------------------------

// Length of the valid UTF-8 sequence at s[i], or 0 if invalid (RFC 3629 well-formed table).
static size_t utf8_seq_len(const unsigned char* s, size_t n) {
  unsigned char c = s[0];
  if (c < 0x80) return 1;
  auto cont = [&](size_t k, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    return k < n && s[k] >= lo && s[k] <= hi;
  };
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c == 0xE0) return cont(1, 0xA0) && cont(2) ? 3 : 0;
  if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) return cont(1) && cont(2) ? 3 : 0;
  if (c == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;  // no surrogates
  if (c == 0xF0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xF1 && c <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

size_t sanitize_utf8(std::string& s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size(), i = 0;
  while (i < n) {  // fast path: nothing to do for valid text
    size_t k = utf8_seq_len(p + i, n - i);
    if (!k) break;
    i += k;
  }
  if (i == n) return 0;
  std::string out(s, 0, i);
  size_t fixes = 0;
  while (i < n) {
    size_t k = utf8_seq_len(p + i, n - i);
    if (k) {
      out.append(s, i, k);
      i += k;
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD, one per invalid byte
      ++fixes;
      ++i;
    }
  }
  s.swap(out);
  return fixes;
}

// ---- LineReader ----------------------------------------------------------------------------

struct LineReader::Impl {
  Compression comp = Compression::kNone;
  FILE* f = nullptr;       // kNone / kZstd
  gzFile gz = nullptr;     // kGzip
  ZSTD_DStream* zs = nullptr;
  std::vector<char> in;    // zstd input buffer
  ZSTD_inBuffer zin{nullptr, 0, 0};
  uint64_t raw_read = 0;
  size_t zs_hint = 0;      // last ZSTD_decompressStream result: 0 = at a frame boundary
  bool eof = false;
  ~Impl() {
    if (f) std::fclose(f);
    if (gz) gzclose(gz);
    if (zs) ZSTD_freeDStream(zs);
  }
};

LineReader::LineReader(const std::string& path) : path_(path), impl_(std::make_unique<Impl>()) {
  impl_->comp = compression_of(path);
  if (impl_->comp == Compression::kGzip) {
    impl_->gz = gzopen(path.c_str(), "rb");
    OLMO_CHECK(impl_->gz, path, ": cannot open: ", std::strerror(errno));
    gzbuffer(impl_->gz, 1 << 17);
  } else {
    impl_->f = std::fopen(path.c_str(), "rb");
    OLMO_CHECK(impl_->f, path, ": cannot open: ", std::strerror(errno));
    if (impl_->comp == Compression::kZstd) {
      impl_->zs = ZSTD_createDStream();
      ZSTD_initDStream(impl_->zs);
      impl_->in.resize(ZSTD_DStreamInSize());
    }
  }
}

LineReader::~LineReader() = default;

uint64_t LineReader::compressed_bytes_read() const {
  if (impl_->gz) {
    z_off_t o = gzoffset(impl_->gz);
    return o < 0 ? 0 : static_cast<uint64_t>(o);
  }
  return impl_->raw_read;
}

bool LineReader::fill() {
  Impl& m = *impl_;
  if (m.eof) return false;
  buf_.erase(0, pos_);
  pos_ = 0;
  size_t old = buf_.size();
  const size_t chunk = 1 << 17;
  if (m.comp == Compression::kGzip) {
    buf_.resize(old + chunk);
    int n = gzread(m.gz, buf_.data() + old, chunk);
    if (n < 0) {
      int err = 0;
      const char* msg = gzerror(m.gz, &err);
      throw Error(cat(path_, ": gzip read failed: ", msg));
    }
    buf_.resize(old + static_cast<size_t>(n));
    if (n == 0) {
      m.eof = true;
      int err = Z_OK;
      const char* msg = gzerror(m.gz, &err);
      OLMO_CHECK(err == Z_OK, path_, ": truncated or corrupt gzip stream: ", msg);
    }
    return n > 0;
  }
  if (m.comp == Compression::kNone) {
    buf_.resize(old + chunk);
    size_t n = std::fread(buf_.data() + old, 1, chunk, m.f);
    OLMO_CHECK(!std::ferror(m.f), path_, ": read failed: ", std::strerror(errno));
    buf_.resize(old + n);
    m.raw_read += n;
    if (n == 0) m.eof = true;
    return n > 0;
  }
  // zstd: decompress until some output is produced or the input ends.
  size_t out_chunk = ZSTD_DStreamOutSize();
  for (;;) {
    if (m.zin.pos == m.zin.size) {
      size_t n = std::fread(m.in.data(), 1, m.in.size(), m.f);
      OLMO_CHECK(!std::ferror(m.f), path_, ": read failed: ", std::strerror(errno));
      m.raw_read += n;
      if (n == 0) {
        m.eof = true;
        OLMO_CHECK(m.zs_hint == 0, path_, ": truncated zstd stream (ends inside a frame after ",
                   m.raw_read, " bytes)");
        return false;
      }
      m.zin = {m.in.data(), n, 0};
    }
    buf_.resize(old + out_chunk);
    ZSTD_outBuffer zout{buf_.data() + old, out_chunk, 0};
    size_t r = ZSTD_decompressStream(m.zs, &zout, &m.zin);
    OLMO_CHECK(!ZSTD_isError(r), path_, ": zstd decompression failed at byte ", m.raw_read,
               ": ", ZSTD_getErrorName(r));
    m.zs_hint = r;
    buf_.resize(old + zout.pos);
    if (zout.pos > 0) return true;
  }
}

bool LineReader::next(std::string& line) {
  for (;;) {
    size_t nl = buf_.find('\n', pos_ + scanned_);
    if (nl != std::string::npos) {
      line.assign(buf_, pos_, nl - pos_);
      pos_ = nl + 1;
      scanned_ = 0;
      ++line_no_;
      return true;
    }
    scanned_ = buf_.size() - pos_;
    OLMO_CHECK(scanned_ <= max_line_, path_, ":", line_no_ + 1, ": line longer than ", max_line_,
               " bytes (the limit for one line)");
    if (!fill()) {
      if (pos_ < buf_.size()) {  // last line without "\n"
        line.assign(buf_, pos_, std::string::npos);
        pos_ = buf_.size();
        scanned_ = 0;
        ++line_no_;
        return true;
      }
      return false;
    }
  }
}

std::string LineReader::read_all() {
  while (fill()) {
  }
  std::string out = buf_.substr(pos_);
  pos_ = buf_.size();
  scanned_ = 0;
  return out;
}

// ---- JSON documents ------------------------------------------------------------------------

std::string parse_document_line(std::string_view line, Document& doc) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line.begin(), line.end());
  } catch (const nlohmann::json::exception& e) {
    std::string msg = e.what();
    return "malformed JSON: " + msg;
  }
  if (!j.is_object()) return "expected a JSON object";
  auto t = j.find("text");
  if (t == j.end()) return "missing field \"text\"";
  if (!t->is_string()) return "field \"text\" is not a string";
  doc.text = std::move(t->get_ref<std::string&>());  // no copy of a long text
  doc.id.clear();
  doc.source.clear();
  if (auto i = j.find("id"); i != j.end()) {
    if (i->is_string()) doc.id = i->get<std::string>();
    else if (i->is_number_integer()) doc.id = i->dump();
    else return "field \"id\" is neither a string nor an integer";
  }
  if (auto s = j.find("source"); s != j.end() && s->is_string()) doc.source = s->get<std::string>();
  return "";
}

std::string document_to_json_line(const Document& doc) {
  nlohmann::ordered_json j;
  j["id"] = doc.id;
  j["source"] = doc.source;
  j["text"] = doc.text;
  try {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict) + "\n";
  } catch (const nlohmann::json::exception& e) {
    throw Error(cat("document '", doc.id, "': cannot write as JSON: ", e.what()));
  }
}

DocumentReader::DocumentReader(const std::string& path, JsonlOptions opt)
    : lines_(path), opt_(opt), jsonl_(is_jsonl_path(path)) {
  lines_.set_max_line_bytes(opt_.max_line_bytes);
}

static bool blank(const std::string& s) {
  for (char c : s)
    if (c != ' ' && c != '\t' && c != '\r') return false;
  return true;
}

bool DocumentReader::next(Document& doc) {
  if (!jsonl_) {
    if (text_done_) return false;
    text_done_ = true;
    doc.text = lines_.read_all();
    doc.id = lines_.path();
    doc.source = "text";
    return true;
  }
  while (lines_.next(line_)) {
    if (blank(line_)) continue;
    std::string why = parse_document_line(line_, doc);
    if (why.empty()) {
      if (doc.id.empty()) doc.id = cat(lines_.path(), ":", lines_.line_number());
      return true;
    }
    if (!opt_.skip_bad_lines)
      throw Error(cat(lines_.path(), ":", lines_.line_number(), ": ", why,
                      " (use --skip-bad-lines to skip and count such lines)"));
    ++bad_lines_;
  }
  return false;
}

std::vector<Document> read_documents(const std::string& path, JsonlOptions opt) {
  DocumentReader r(path, opt);
  std::vector<Document> out;
  Document d;
  while (r.next(d)) out.push_back(d);
  return out;
}

// ---- JsonlWriter ---------------------------------------------------------------------------

struct JsonlWriter::Impl {
  explicit Impl(const std::string& path) : f(path) {}
  AtomicFile f;  // core: temporary in the same directory, published by close()
  Compression comp = Compression::kNone;
  ZSTD_CStream* zs = nullptr;
  z_stream gz{};
  bool gz_init = false;
  std::vector<char> out;
  ~Impl() {
    if (zs) ZSTD_freeCStream(zs);
    if (gz_init) deflateEnd(&gz);
  }
};

JsonlWriter::JsonlWriter(const std::string& path)
    : path_(path), impl_(std::make_unique<Impl>(path)) {
  Impl& m = *impl_;
  m.comp = compression_of(path);
  m.out.resize(1 << 17);
  if (m.comp == Compression::kZstd) {
    m.zs = ZSTD_createCStream();
    ZSTD_CCtx_setParameter(m.zs, ZSTD_c_compressionLevel, 9);
    ZSTD_CCtx_setParameter(m.zs, ZSTD_c_nbWorkers, 0);
  } else if (m.comp == Compression::kGzip) {
    // windowBits 15 + 16: gzip wrapper; zlib writes mtime 0 and no name: deterministic.
    OLMO_CHECK(deflateInit2(&m.gz, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) == Z_OK, path,
               ": deflateInit2 failed");
    m.gz_init = true;
  }
}

JsonlWriter::~JsonlWriter() = default;  // uncommitted: AtomicFile removes the temporary

void JsonlWriter::put(std::string_view bytes, bool flush) {
  Impl& m = *impl_;
  auto emit = [&](const char* p, size_t n) {
    if (n > 0) m.f.write(p, n);
  };
  if (m.comp == Compression::kNone) {
    emit(bytes.data(), bytes.size());
    return;
  }
  if (m.comp == Compression::kZstd) {
    ZSTD_inBuffer in{bytes.data(), bytes.size(), 0};
    for (;;) {
      ZSTD_outBuffer out{m.out.data(), m.out.size(), 0};
      size_t r = ZSTD_compressStream2(m.zs, &out, &in, flush ? ZSTD_e_end : ZSTD_e_continue);
      OLMO_CHECK(!ZSTD_isError(r), path_, ": zstd compression failed: ", ZSTD_getErrorName(r));
      emit(m.out.data(), out.pos);
      if (flush ? r == 0 : in.pos == in.size) break;
    }
    return;
  }
  m.gz.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  m.gz.avail_in = static_cast<uInt>(bytes.size());
  for (;;) {
    m.gz.next_out = reinterpret_cast<Bytef*>(m.out.data());
    m.gz.avail_out = static_cast<uInt>(m.out.size());
    int r = deflate(&m.gz, flush ? Z_FINISH : Z_NO_FLUSH);
    OLMO_CHECK(r == Z_OK || r == Z_STREAM_END || r == Z_BUF_ERROR, path_, ": deflate failed");
    emit(m.out.data(), m.out.size() - m.gz.avail_out);
    if (flush ? r == Z_STREAM_END : (m.gz.avail_in == 0 && m.gz.avail_out != 0)) break;
  }
}

void JsonlWriter::write(const Document& doc) {
  OLMO_CHECK(!closed_, path_, ": write after close");
  std::string line = document_to_json_line(doc);
  put(line, false);
  ++docs_;
  text_bytes_ += doc.text.size();
}

void JsonlWriter::close() {
  if (closed_) return;
  put({}, true);
  impl_->f.commit();
  closed_ = true;
}

}  // namespace olmo::corpus
