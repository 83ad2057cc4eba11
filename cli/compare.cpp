// `olmo compare RUN_A RUN_B [--out PNG]`: two runs side by side. Prints, per validation record
// step (RUN_DIR/validation.jsonl, train/validation.h), train loss, held-out loss per set, model
// and served entropies and the gap of both runs, then each run's alarms (metrics.jsonl
// {"kind":"alarm"}) per source/cause with the first step; draws one PNG (train and held-out
// curves of both runs, default RUN_B/compare.png) with scripts/compare_runs.py (matplotlib).
// Errors: a run dir without metrics.jsonl or validation.jsonl names the file.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "args.h"
#include "command.h"
#include "core/error.h"
#include "core/file_io.h"
#include "train/validation.h"

namespace fs = std::filesystem;
using nlohmann::json;
using olmo::cat;

namespace {

struct Alarms {
  std::map<std::string, std::pair<int64_t, int64_t>> by_cause;  // count, first step
  int64_t total = 0;
};

Alarms read_alarms(const std::string& run) {
  std::string path = (fs::path(run) / "metrics.jsonl").string();
  OLMO_CHECK(fs::exists(path), "compare: ", run, " has no metrics.jsonl (not a run dir?)");
  Alarms a;
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);) {
    try {
      json j = json::parse(line);
      if (j.value("kind", "") != "alarm") continue;
      std::string k = j.value("source", "?") + "/" + j.value("cause", "?");
      auto& e = a.by_cause[k];
      if (e.first++ == 0) e.second = j.value("step", int64_t(0));
      ++a.total;
    } catch (...) {
    }
  }
  return a;
}

std::string fmt(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.4f", j[key].get<double>());
  return b;
}

int run_compare(int argc, char** argv) {
  olmo::cli::Args a(argc, argv, {"--no-plot"});
  if (a.has("--help") || a.positional().size() != 2) {
    std::printf("usage: olmo compare RUN_A RUN_B [--out PNG] [--no-plot]\n");
    return a.has("--help") ? 0 : 1;
  }
  a.finish({"--out", "--no-plot"});
  const std::string A = a.positional()[0], B = a.positional()[1];
  for (auto& r : {A, B}) OLMO_CHECK(fs::is_directory(r), "compare: run dir not found: ", r);
  Alarms aa = read_alarms(A), ab = read_alarms(B);
  auto va = olmo::train::read_validation_records(A);
  auto vb = olmo::train::read_validation_records(B);
  std::set<std::string> sets;
  for (auto* v : {&va, &vb})
    for (auto& [s, r] : *v)
      if (r.contains("heldout"))
        for (auto& [k, x] : r["heldout"].items()) sets.insert(k);
  std::printf("A = %s\nB = %s\n", A.c_str(), B.c_str());
  std::printf("%6s | %-17s |", "step", "train loss A / B");
  for (auto& s : sets) std::printf(" %-25s |", cat("held-out ", s, " A / B").c_str());
  std::printf(" %-17s | %-17s | %-17s\n", "model H A / B", "served H A / B", "gap A / B");
  std::set<int64_t> steps;
  for (auto& [s, r] : va) steps.insert(s);
  for (auto& [s, r] : vb) steps.insert(s);
  for (int64_t s : steps) {
    json ra = va.count(s) ? va[s] : json(), rb = vb.count(s) ? vb[s] : json();
    std::printf("%6lld | %8s %8s |", (long long)s, fmt(ra, "train_loss").c_str(),
                fmt(rb, "train_loss").c_str());
    for (auto& set : sets) {
      json ha = ra.is_object() && ra.contains("heldout") ? ra["heldout"] : json();
      json hb = rb.is_object() && rb.contains("heldout") ? rb["heldout"] : json();
      std::printf(" %12s %12s |", fmt(ha, set.c_str()).c_str(), fmt(hb, set.c_str()).c_str());
    }
    json ga = ra.is_object() && ra.contains("gap") ? ra["gap"] : json();
    json gb = rb.is_object() && rb.contains("gap") ? rb["gap"] : json();
    std::string g0 = sets.empty() ? "" : *sets.begin();
    std::printf(" %8s %8s | %8s %8s | %8s %8s\n", fmt(ra, "model_entropy").c_str(),
                fmt(rb, "model_entropy").c_str(), fmt(ra, "served_entropy_bits").c_str(),
                fmt(rb, "served_entropy_bits").c_str(), fmt(ga, g0.c_str()).c_str(),
                fmt(gb, g0.c_str()).c_str());
  }
  for (auto& [name, al] : {std::pair{A, &aa}, std::pair{B, &ab}}) {
    std::printf("alarms %s: %lld\n", name.c_str(), (long long)al->total);
    for (auto& [k, e] : al->by_cause)
      std::printf("  %-32s %5lld (first at step %lld)\n", k.c_str(), (long long)e.first,
                  (long long)e.second);
  }
  if (a.has("--no-plot")) return 0;
  std::string py = std::string(OLMO_SOURCE_DIR) + "/.venv/bin/python";
  if (!olmo::file_exists(py)) py = "python3";
  std::string script = std::string(OLMO_SOURCE_DIR) + "/scripts/compare_runs.py";
  OLMO_CHECK(olmo::file_exists(script), "missing ", script);
  std::string out = a.has("--out") ? a.get("--out") : (fs::path(B) / "compare.png").string();
  std::vector<std::string> args = {py, script, A, B, "--out", out};
  std::vector<char*> cargs;
  for (auto& s : args) cargs.push_back(s.data());
  cargs.push_back(nullptr);
  std::fflush(stdout);
  pid_t pid = fork();
  OLMO_CHECK(pid >= 0, "compare: cannot fork");
  if (pid == 0) {
    execvp(cargs[0], cargs.data());
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  OLMO_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "compare: ", script, " failed");
  return 0;
}

OLMO_COMMAND("compare", "two runs side by side (loss, held-out, entropies, alarms) + one PNG",
             run_compare);

}  // namespace
