// `olmo compare RUN_A RUN_B [--out PNG] [--floor-multiple X]`: two runs side by side. Prints, per
// validation record step (RUN_DIR/validation.jsonl, monitor/validation.h), train loss, held-out loss
// per set, model and served entropies and the gap of both runs, then each run's alarms
// (metrics.jsonl {"kind":"alarm"}) per source/cause with the first step; draws one PNG (train and
// held-out curves of both runs, default RUN_B/compare.png) with scripts/compare_runs.py
// (matplotlib).
// Errors: a run dir without metrics.jsonl or validation.jsonl names the file.
// When RUN_B is a reference run of OLMo-core (scripts/olmo_core_run.py, monitor/reference_run.h)
// the comparison is step by step instead: exact checks (instance indices, tokens, LR, skip
// decisions) and noise-floor bounds (loss, z-loss, grad norm, held-out loss, gap, entropies,
// per parameter group weight and update RMS: param_rms.weight.<group>, monitor/param_rms.h);
// it prints a table per quantity (largest difference, in noise floors, and which twin of the
// reference's noise floor set the floor there: noise_twin or clip_twin, scripts/noise_floor.py)
// and every violation (step, quantity, both values, bound, the twin), and exits 3 when there is
// one, 0 otherwise. The bounds are X noise floors: --floor-multiple, else RUN_A's
// validation.reference_floor_multiple (20).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "cli_app.h"
#include "command.h"
#include "core/error.h"
#include "core/file_io.h"
#include "monitor/reference_run.h"
#include "monitor/validation.h"

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

// RUN against a reference run of OLMo-core; returns the exit code (0 in tolerance, 3 not).
int compare_reference(const std::string& run, const std::string& ref_dir,
                      std::optional<double> multiple) {
  using namespace olmo::train;
  ReferenceRun ref = load_reference_run(ref_dir);
  ReferenceComparison c = compare_with_reference(run, ref, multiple);
  std::printf("run       = %s\nreference = %s (%s %s)\nnoise floor: %s\n", run.c_str(),
              ref_dir.c_str(), ref.info.value("framework", "?").c_str(),
              ref.info.value("olmo_core_version", "").c_str(), ref.floor_method.c_str());
  for (auto& [name, method] : ref.twins)
    std::printf("  twin %-10s %s\n", name.c_str(), method.c_str());
  std::printf("bound: %g x the floor's running max + %g x |reference| (param_rms.update.*: "
              "%g x); %lld train steps from step %lld\n", c.multiple, kRelSlack,
              kUpdateRelSlack, (long long)c.steps, (long long)c.first_step);
  std::printf("%-34s %8s %12s %6s %12s %10s %6s  %s\n", "quantity", "checked", "max |diff|",
              "step", "max floor", "diff/floor", "step", "floor set by (at that step)");
  for (auto& [q, s] : c.summary) {
    if (s.max_floor == 0 && s.max_abs == 0 && s.max_ratio == 0)
      std::printf("%-34s %8lld %12s\n", q.c_str(), (long long)s.checked, "exact");
    else
      std::printf("%-34s %8lld %12.4g %6lld %12.4g %10.3g %6lld  %s\n", q.c_str(),
                  (long long)s.checked, s.max_abs, (long long)s.max_abs_step, s.max_floor,
                  s.max_ratio, (long long)s.max_ratio_step,
                  s.floor_by.empty() ? "-" : s.floor_by.c_str());
  }
  const size_t shown = std::min<size_t>(c.failures.size(), 20);
  for (size_t i = 0; i < shown; ++i) {
    const auto& f = c.failures[i];
    std::printf("OUT OF TOLERANCE step %lld %s: ours %s, reference %s, bound %s\n",
                (long long)f.step, f.quantity.c_str(), f.ours.c_str(), f.ref.c_str(),
                f.bound.c_str());
  }
  if (c.failures.size() > shown)
    std::printf("... %zu more violations\n", c.failures.size() - shown);
  std::printf("%s: %zu violation%s\n", c.failures.empty() ? "IN TOLERANCE" : "DIVERGED",
              c.failures.size(), c.failures.size() == 1 ? "" : "s");
  return c.failures.empty() ? olmo::cli::kExitOk : olmo::cli::kExitFindings;
}

int run_compare(int argc, char** argv) {
  auto app = olmo::cli::make_app(
      "compare",
      "Two runs side by side: train loss, held-out loss per set, model and served entropies and "
      "the gap at every validation step, each run's alarms, and one PNG of both runs' curves. "
      "When RUN_B is an OLMo-core reference run (scripts/olmo_core_run.py) the check is step by "
      "step instead: exact fields, and noise-floor bounds on the rest.");
  std::string A, B, out;
  double floor_multiple = 0;
  bool no_plot = false;
  app->add_option("RUN_A", A, "a run directory (ours)")->required();
  app->add_option("RUN_B", B, "a run directory, or an OLMo-core reference run")->required();
  app->add_option("--out", out, "the PNG (default RUN_B/compare.png)");
  app->add_flag("--no-plot", no_plot, "no PNG");
  auto* fm = app->add_option("--floor-multiple", floor_multiple,
                             "reference runs only: the bounds are X noise floors (default "
                             "RUN_A's validation.reference_floor_multiple, 20)")
                 ->check(olmo::cli::positive());
  app->footer("exit: 0 (in tolerance), 3 a reference run out of tolerance, 1 error");
  olmo::cli::parse(*app, argc, argv);
  for (auto& r : {A, B}) OLMO_CHECK(fs::is_directory(r), "compare: run dir not found: ", r);
  std::optional<double> multiple;
  if (fm->count()) multiple = floor_multiple;
  if (olmo::train::is_reference_run(B)) return compare_reference(A, B, multiple);
  OLMO_CHECK(!multiple, "compare: --floor-multiple applies only when ", B,
             " is an OLMo-core reference run");
  OLMO_CHECK(!olmo::train::is_reference_run(A), "compare: ", A,
             " is the OLMo-core reference run: give it second (olmo compare RUN REF)");
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
  if (no_plot) return 0;
  std::string py = std::string(OLMO_SOURCE_DIR) + "/.venv/bin/python";
  if (!olmo::file_exists(py)) py = "python3";
  std::string script = std::string(OLMO_SOURCE_DIR) + "/scripts/compare_runs.py";
  OLMO_CHECK(olmo::file_exists(script), "missing ", script);
  if (out.empty()) out = (fs::path(B) / "compare.png").string();
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
