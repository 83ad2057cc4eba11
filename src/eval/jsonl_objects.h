// The JSONL files of the evaluation tasks (benchmark suites, OLMo task requests): one JSON object
// per non-blank line. for_each_json_object(path, what, f) parses the lines in order and calls
// f(object, at, line_number) with at = "PATH:LINE: " for the caller's own field errors; f
// returns false to stop reading. A line that is not JSON, or not an object ("<what> must be a
// JSON object"), is an olmo::Error naming the file and line. Cost: one read of the file.
#pragma once
#include <cstdint>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_io.h"

namespace olmo::eval {

template <class F>
void for_each_json_object(const std::string& path, const std::string& what, F&& f) {
  std::istringstream in(read_file(path));
  std::string line;
  for (int64_t ln = 1; std::getline(in, line); ++ln) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string at = cat(path, ":", ln, ": ");
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      throw Error(cat(at, "not valid JSON: ", e.what()));
    }
    OLMO_CHECK(j.is_object(), at, what, " must be a JSON object");
    if (!f(j, at, ln)) return;
  }
}

}  // namespace olmo::eval
