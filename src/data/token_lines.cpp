// Token-id line files (token_lines.h).
#include "data/token_lines.h"

#include <cerrno>
#include <cstdlib>

#include "core/error.h"
#include "core/file_io.h"

namespace olmo::data {

namespace {
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }
}  // namespace

std::vector<std::vector<int32_t>> parse_token_lines(std::string_view text, int64_t vocab,
                                                    const std::string& path) {
  OLMO_CHECK(vocab > 0 && vocab <= INT32_MAX, path, ": vocabulary size ", vocab,
             " outside [1, 2^31)");
  std::vector<std::vector<int32_t>> seqs;
  std::vector<int32_t> s;
  int64_t ln = 1;
  size_t i = 0;
  const size_t n = text.size();
  while (i <= n) {
    if (i == n || text[i] == '\n') {  // end of a line
      if (!s.empty()) seqs.push_back(std::move(s));
      s.clear();
      ++ln;
      ++i;
      continue;
    }
    if (is_space(text[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < n && text[j] != '\n' && !is_space(text[j])) ++j;
    const std::string_view w = text.substr(i, j - i);
    // Decimal digits only (an optional sign is accepted so that "-1" is reported as out of range).
    size_t k = (w[0] == '-' || w[0] == '+') ? 1 : 0;
    bool digits = k < w.size();
    for (size_t q = k; q < w.size(); ++q) digits = digits && w[q] >= '0' && w[q] <= '9';
    OLMO_CHECK(digits, path, ":", ln, ": '", w, "' is not a token id");
    // Saturate long numbers instead of overflowing: anything past 19 digits is out of range.
    int64_t v = 0;
    bool big = false;
    for (size_t q = k; q < w.size(); ++q) {
      if (v > (INT64_MAX - 9) / 10) {
        big = true;
        break;
      }
      v = v * 10 + (w[q] - '0');
    }
    const bool neg = w[0] == '-' && (v != 0 || big);
    OLMO_CHECK(!big && !neg && v < vocab, path, ":", ln, ": token id ", w,
               " outside the vocabulary [0, ", vocab, ")");
    s.push_back(int32_t(v));
    i = j;
  }
  OLMO_CHECK(!seqs.empty(), path, ": no token sequences");
  return seqs;
}

std::vector<std::vector<int32_t>> read_token_lines(const std::string& path, int64_t vocab) {
  OLMO_CHECK(file_exists(path), path, ": token file not found");
  return parse_token_lines(read_file(path), vocab, path);
}

}  // namespace olmo::data
