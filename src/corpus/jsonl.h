// Dolma-style JSONL documents: reading .jsonl / .jsonl.gz (zlib) / .jsonl.zst (zstd) and plain
// text files, and writing .jsonl / .jsonl.zst deterministically.
//
// A document is {"id": string, "source": string, "text": string}; only "text" is required on
// input (a missing id becomes "<file>:<line>", a numeric id is printed as a decimal string).
// Blank lines are ignored. A line that is not a JSON object with a string "text" throws
// olmo::Error "FILE:LINE: ..." unless skip_bad_lines is set, in which case it is counted in
// bad_lines() and skipped. Plain text (any other extension, optionally .gz/.zst compressed) is one
// document per file with id = the path and source "text".
// Cost: streaming, O(longest line) memory; decompression at zlib/zstd speed.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace olmo::corpus {

struct Document {
  std::string id;
  std::string source;
  std::string text;
};

enum class Compression { kNone, kGzip, kZstd };
// From the file name: *.gz -> kGzip, *.zst / *.zstd -> kZstd, else kNone.
Compression compression_of(const std::string& path);
// True for *.jsonl, *.jsonl.gz, *.jsonl.zst, *.json.gz, *.json.zst (Dolma's names).
bool is_jsonl_path(const std::string& path);

// Replaces each invalid UTF-8 sequence (overlong, surrogate, truncated, > U+10FFFF) by U+FFFD;
// returns the number of replacements (0: s is unchanged).
size_t sanitize_utf8(std::string& s);

// Decompressing line reader. next() returns false at end of file; the line excludes "\n" (a
// trailing "\r" is kept: JSON treats it as whitespace). Errors name the path.
class LineReader {
 public:
  explicit LineReader(const std::string& path);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;
  bool next(std::string& line);
  // Longest line next() accepts (default 1 GiB): a longer one throws "<path>:<line>: line longer
  // than N bytes", so a file without newlines cannot take unbounded memory. Time stays linear in
  // the line length (the newline search resumes where the last one stopped).
  void set_max_line_bytes(size_t n) { max_line_ = n; }
  // Reads the whole (decompressed) remainder.
  std::string read_all();
  uint64_t line_number() const { return line_no_; }  // 1-based number of the last line read
  uint64_t compressed_bytes_read() const;              // for progress bars
  const std::string& path() const { return path_; }

 private:
  bool fill();  // refill buf_ with decompressed bytes; false at EOF
  std::string path_;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string buf_;
  size_t pos_ = 0;
  size_t scanned_ = 0;  // bytes of buf_ after pos_ known to hold no "\n"
  size_t max_line_ = size_t(1) << 30;
  uint64_t line_no_ = 0;
};

struct JsonlOptions {
  bool skip_bad_lines = false;
  size_t max_line_bytes = size_t(1) << 30;  // LineReader::set_max_line_bytes
};

// Reads documents from one input file (JSONL or plain text, chosen by is_jsonl_path).
class DocumentReader {
 public:
  explicit DocumentReader(const std::string& path, JsonlOptions opt = {});
  bool next(Document& doc);
  uint64_t bad_lines() const { return bad_lines_; }
  uint64_t compressed_bytes_read() const { return lines_.compressed_bytes_read(); }

 private:
  LineReader lines_;
  JsonlOptions opt_;
  bool jsonl_;
  bool text_done_ = false;
  uint64_t bad_lines_ = 0;
  std::string line_;
};

// Parses one JSONL line into doc; returns "" on success or the reason it is malformed.
std::string parse_document_line(std::string_view line, Document& doc);
// One JSON object line (with "\n"). Text must be valid UTF-8 (see sanitize_utf8).
std::string document_to_json_line(const Document& doc);

// Writes documents to PATH (.jsonl, .jsonl.gz or .jsonl.zst by name) through a temporary file;
// close() renames it into place, so PATH never holds a partial file. Output bytes are a pure
// function of the documents (zstd level 9 single-threaded; gzip header without mtime/name).
class JsonlWriter {
 public:
  explicit JsonlWriter(const std::string& path);
  ~JsonlWriter();  // without close(): removes the temporary file
  JsonlWriter(const JsonlWriter&) = delete;
  JsonlWriter& operator=(const JsonlWriter&) = delete;
  void write(const Document& doc);
  void close();
  uint64_t docs() const { return docs_; }
  uint64_t text_bytes() const { return text_bytes_; }

 private:
  void put(std::string_view bytes, bool flush);
  std::string path_;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  uint64_t docs_ = 0, text_bytes_ = 0;
  bool closed_ = false;
};

// All documents of one file (tests, small inputs).
std::vector<Document> read_documents(const std::string& path, JsonlOptions opt = {});

}  // namespace olmo::corpus
