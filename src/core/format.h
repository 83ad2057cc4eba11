// Number formatting for human-readable reports: commas(1234567) = "1,234,567".
// Cost: O(digits).
#pragma once
#include <cstdint>
#include <string>

namespace olmo {

inline std::string commas(int64_t v) {
  std::string s = std::to_string(v < 0 ? -v : v), r;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0) r += ',';
    r += s[i];
  }
  return v < 0 ? "-" + r : r;
}

}  // namespace olmo
