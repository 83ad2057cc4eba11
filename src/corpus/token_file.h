// OLMo-format token files: headerless little-endian uint32 token ids (named .npy as OLMo-core
// and Dolma do; OLMo-core reads them with np.memmap(dtype=uint32)) plus a document index beside
// each, PART.csv.gz, one line "start,end,id" per document (token offsets into the file, end
// exclusive, the trailing EOS inside [start, end)). OLMo-core's iter_document_indices reads the
// first two fields of that file; the id is CSV-quoted only when it holds ',', '"' or a newline.
// Contracts: the writer streams to a temporary name and commit() renames it into place (index
// first, then the .npy), so a final name never holds a partial file; every id is checked < vocab.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "core/file_io.h"

namespace olmo::corpus {

struct DocSpan {
  uint64_t start = 0, end = 0;  // token offsets, end exclusive
  std::string id;
};

// "dir/part-00003.npy" -> "dir/part-00003.csv.gz".
std::string doc_index_path(const std::string& npy_path);
// CSV field: as is, or quoted with "" doubling when it holds , " \r or \n.
std::string csv_field(const std::string& s);
// gzip (RFC 1952) of bytes, deterministic (mtime 0, no name).
std::string gzip_compress(const std::string& bytes, int level = 6);

class TokenFileWriter {
 public:
  TokenFileWriter(const std::string& npy_path, uint32_t vocab_size);
  ~TokenFileWriter();  // without commit(): removes the temporary file
  TokenFileWriter(const TokenFileWriter&) = delete;
  TokenFileWriter& operator=(const TokenFileWriter&) = delete;

  // Appends one document's tokens (the caller includes its EOS). Throws if an id >= vocab.
  void add_document(const std::string& id, const uint32_t* tokens, size_t n);
  void commit();
  uint64_t tokens() const { return tokens_; }
  size_t docs() const { return index_.size(); }
  const std::string& path() const { return path_; }

 private:
  void flush_buffer();
  std::string path_;
  uint32_t vocab_;
  AtomicFile f_;  // core: temporary in the same directory, published by commit()
  std::vector<uint32_t> buf_;
  std::string index_csv_;
  std::vector<DocSpan> index_;
  uint64_t tokens_ = 0;
  bool committed_ = false;
};

// Read-only memory-mapped token file. Throws if its size is not a multiple of 4 (naming the
// file and size).
class TokenFile {
 public:
  explicit TokenFile(const std::string& path);
  const uint32_t* data() const { return reinterpret_cast<const uint32_t*>(map_.data()); }
  size_t size() const { return map_.size() / 4; }  // tokens
  const std::string& path() const { return map_.path(); }
  // Throws "<path>: token id X at offset I is >= vocab size V" for the first bad id.
  void check_ids(uint32_t vocab_size) const;

 private:
  MappedFile map_;
};

// Parses a .csv.gz document index; errors name the file and line. If n_tokens > 0, also checks
// that spans are in range, contiguous from 0 and end at n_tokens.
std::vector<DocSpan> read_doc_index(const std::string& csv_gz_path, uint64_t n_tokens = 0);

}  // namespace olmo::corpus
