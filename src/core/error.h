// Error reporting for olmo.cpp: one exception type, a string builder, and a check macro.
// Contract: every user-facing failure (bad file, bad config, bad flag) throws olmo::Error with a
// message that names the file/key and the problem; the CLI prints it and exits 1 (2 for a
// UsageError), never aborts.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace olmo {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

// A malformed command-line argument found below the CLI's parser (a key=value override with an
// unknown key or a value of the wrong type): the CLI prints it and exits 2 (usage error).
class UsageError : public Error {
 public:
  using Error::Error;
};

// cat("a", 1, 'b') -> "a1b" (ostream formatting of each argument).
template <class... A>
std::string cat(A&&... a) {
  std::ostringstream os;
  (os << ... << std::forward<A>(a));
  return os.str();
}

}  // namespace olmo

// OLMO_CHECK(cond, parts...): throw olmo::Error(cat(parts...)) when cond is false.
#define OLMO_CHECK(cond, ...)                              \
  do {                                                     \
    if (!(cond)) throw ::olmo::Error(::olmo::cat(__VA_ARGS__)); \
  } while (0)
