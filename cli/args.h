// Minimal flag parser for the CLI: `--key value`, `--key=value`, boolean `--flag`, positionals.
// Usage: Args a(argc, argv, {"--json", "--loss"} /* boolean flags */);
//        a.get("--preset"), a.get_int("--seq", 2048), a.has("--json"), a.positional().
// Unknown flags are reported by a.finish({"--preset", ...}) as an olmo::Error naming the flag.
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"

namespace olmo::cli {

class Args {
 public:
  // argv[0] is the subcommand (skipped); bool_flags take no value.
  Args(int argc, char** argv, std::set<std::string> bool_flags = {}, int skip = 1) {
    for (int i = skip; i < argc; ++i) {
      std::string a = argv[i];
      if (a.rfind("--", 0) == 0 && a.size() > 2) {
        auto eq = a.find('=');
        if (eq != std::string::npos) {
          kv_[a.substr(0, eq)] = a.substr(eq + 1);
        } else if (bool_flags.count(a) || a == "--help" || a == "-h") {
          kv_[a] = "1";
        } else {
          OLMO_CHECK(i + 1 < argc, "flag ", a, " needs a value");
          kv_[a] = argv[++i];
        }
      } else if (a == "-h") {
        kv_["--help"] = "1";
      } else {
        pos_.push_back(a);
      }
    }
  }
  bool has(const std::string& k) const { return kv_.count(k) > 0; }
  std::string get(const std::string& k, const std::string& def = "") const {
    auto it = kv_.find(k);
    return it == kv_.end() ? def : it->second;
  }
  std::string require(const std::string& k) const {
    OLMO_CHECK(has(k), "missing required flag ", k);
    return get(k);
  }
  long long get_int(const std::string& k, long long def) const {
    if (!has(k)) return def;
    const std::string& v = kv_.at(k);
    size_t used = 0;
    long long x = 0;
    try {
      x = std::stoll(v, &used);
    } catch (...) {
      used = 0;
    }
    OLMO_CHECK(used == v.size() && !v.empty(), "flag ", k, ": '", v, "' is not an integer");
    return x;
  }
  double get_double(const std::string& k, double def) const {
    if (!has(k)) return def;
    const std::string& v = kv_.at(k);
    size_t used = 0;
    double x = 0;
    try {
      x = std::stod(v, &used);
    } catch (...) {
      used = 0;
    }
    OLMO_CHECK(used == v.size() && !v.empty(), "flag ", k, ": '", v, "' is not a number");
    return x;
  }
  const std::vector<std::string>& positional() const { return pos_; }
  // Throws if a flag outside `known` (plus --help) was given.
  void finish(const std::set<std::string>& known) const {
    for (auto& [k, v] : kv_)
      OLMO_CHECK(known.count(k) || k == "--help", "unknown flag ", k);
  }

 private:
  std::map<std::string, std::string> kv_;
  std::vector<std::string> pos_;
};

}  // namespace olmo::cli
