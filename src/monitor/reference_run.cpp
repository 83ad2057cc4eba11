// Reference runs of OLMo-core and the step-by-step comparison with them (see reference_run.h).
#include "monitor/reference_run.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "data/fsl_dataset.h"
#include "data/token_paths.h"
#include "monitor/validation.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace olmo::train {

namespace {

json read_json_file(const std::string& path) {
  std::ifstream f(path);
  OLMO_CHECK(f.good(), path, ": cannot read");
  try {
    return json::parse(f);
  } catch (const std::exception& e) {
    throw Error(cat(path, ": not JSON: ", e.what()));
  }
}

// Records of metrics.jsonl by kind: train (step -> last record) and whether an end record exists.
struct MetricsFile {
  std::map<int64_t, json> train;
  std::map<int64_t, json> param_rms;
  bool ended = false;
  json start;
};

MetricsFile read_metrics(const std::string& run_dir) {
  const std::string path = (fs::path(run_dir) / "metrics.jsonl").string();
  OLMO_CHECK(fs::exists(path), run_dir, ": no metrics.jsonl (not a run dir?)");
  MetricsFile m;
  std::ifstream f(path);
  int64_t n = 0;
  for (std::string line; std::getline(f, line);) {
    ++n;
    if (line.empty()) continue;
    json j = json::parse(line, nullptr, false);
    OLMO_CHECK(!j.is_discarded() && j.is_object(), path, ":", n, ": not a JSON record");
    const std::string kind = j.value("kind", "");
    if (kind == "train" && j.contains("step")) m.train[j["step"].get<int64_t>()] = j;
    if (kind == "param_rms" && j.contains("step")) m.param_rms[j["step"].get<int64_t>()] = j;
    if (kind == "info" && j.value("event", "") == "end") m.ended = true;
    if (kind == "info" && j.value("event", "") == "start") m.start = j;
  }
  return m;
}

double numv(const json& j, const std::string& k) {
  return j.is_object() && j.contains(k) && j[k].is_number() ? j[k].get<double>() : std::nan("");
}

std::string g(double x) {
  char b[40];
  std::snprintf(b, sizeof b, "%.9g", x);
  return b;
}

uint64_t digest_of(const data::FslDataset& ds, const std::vector<int64_t>& idx) {
  const int64_t T = ds.seq_len();
  uint64_t s = 0, pos = 0;
  for (int64_t i : idx) {
    const uint32_t* v = ds.view(i);
    for (int64_t t = 0; t < T; ++t, ++pos) s += (uint64_t(v[t]) + 1) * (2 * pos + 1);
  }
  return s;
}

}  // namespace

bool is_reference_run(const std::string& dir) {
  return fs::exists(fs::path(dir) / "reference.json");
}

ReferenceRun load_reference_run(const std::string& dir) {
  ReferenceRun r;
  r.dir = dir;
  const fs::path p(dir);
  OLMO_CHECK(fs::is_directory(p), "reference run not found: ", dir);
  OLMO_CHECK(is_reference_run(dir), dir, ": not a reference run (no reference.json; written by "
             "scripts/olmo_core_run.py)");
  r.info = read_json_file((p / "reference.json").string());
  for (const char* f : {"config.yaml", "metrics.jsonl", "noise_floor.json"})
    OLMO_CHECK(fs::exists(p / f), dir, ": incomplete reference run: no ", f,
               std::string(f) == "noise_floor.json"
                   ? " (run scripts/olmo_core_run.py with --noise-floor)" : "");
  MetricsFile m = read_metrics(dir);
  OLMO_CHECK(m.ended, dir, ": incomplete reference run: metrics.jsonl has no end record (the "
             "OLMo-core run did not finish)");
  OLMO_CHECK(!m.train.empty(), dir, ": incomplete reference run: no train records");
  const int64_t first = m.train.begin()->first, last = m.train.rbegin()->first;
  OLMO_CHECK(int64_t(m.train.size()) == last - first + 1, dir,
             ": incomplete reference run: train records missing between steps ", first, " and ",
             last);
  r.train = std::move(m.train);
  r.param_rms = std::move(m.param_rms);
  if (fs::exists(p / "validation.jsonl")) r.validation = read_validation_records(dir);
  json nf = read_json_file((p / "noise_floor.json").string());
  r.floor_method = nf.value("method", "");
  const std::string single = nf.value("twin", "");  // a floor from one twin (no "set_by")
  const json set_by = nf.value("set_by", json::object());
  for (const char* part : {"train", "validation", "param_rms"}) {
    if (!nf.contains(part)) continue;
    for (auto& [q, steps] : nf[part].items()) {
      const std::string key = cat(part, ".", q);
      for (auto& [s, v] : steps.items()) {
        if (!v.is_number()) continue;
        r.floor[key][std::stoll(s)] = v.get<double>();
        const json* by = set_by.contains(key) && set_by[key].contains(s) ? &set_by[key][s] : nullptr;
        r.floor_by[key][std::stoll(s)] = by && by->is_string() ? by->get<std::string>() : single;
      }
    }
  }
  if (nf.contains("twins") && nf["twins"].is_object())
    for (auto& [name, t] : nf["twins"].items())
      r.twins.emplace_back(name, t.is_object() ? t.value("method", "") : "");
  OLMO_CHECK(r.floor.count("train.loss"), dir, "/noise_floor.json: no train.loss floor");
  return r;
}

FloorEnvelope reference_envelope(const ReferenceRun& ref, const std::string& q, int64_t step) {
  FloorEnvelope e{std::nan(""), ""};
  auto it = ref.floor.find(q);
  if (it == ref.floor.end()) return e;
  const auto by = ref.floor_by.find(q);
  double env = -1;
  for (auto& [s, v] : it->second) {
    if (s > step) break;
    if (v > env) {
      env = v;
      e.set_by = by == ref.floor_by.end() ? "" : by->second.at(s);
    }
  }
  if (env >= 0) e.value = env;
  return e;
}

double reference_bound(const ReferenceRun& ref, const std::string& q, int64_t step,
                       double ref_value, double multiple) {
  const double env = reference_envelope(ref, q, step).value;
  return std::isfinite(env) ? multiple * env + kRelSlack * std::fabs(ref_value) : std::nan("");
}

ReferenceComparison compare_with_reference(const std::string& run_dir, const ReferenceRun& ref,
                                           std::optional<double> multiple) {
  ReferenceComparison out;
  const std::string our_cfg_path = (fs::path(run_dir) / "config.yaml").string();
  OLMO_CHECK(fs::exists(our_cfg_path), run_dir, ": no config.yaml (not a run dir?)");
  Config ours = load_config(our_cfg_path);
  const double mult = multiple.value_or(ours.validation.reference_floor_multiple);
  OLMO_CHECK(std::isfinite(mult) && mult > 0, "noise-floor multiple must be a number > 0, not ",
             mult);
  out.multiple = mult;
  Config theirs = load_config((fs::path(ref.dir) / "config.yaml").string());
  {
    auto a = comparable_config(ours), b = comparable_config(theirs);
    std::string diffs;
    for (auto& [k, v] : a) {
      auto it = b.find(k);
      if (it == b.end() || it->second != v)
        diffs += cat("\n  ", k, ": ", v, " here, ", it == b.end() ? "(absent)" : it->second,
                     " in the reference");
    }
    OLMO_CHECK(diffs.empty(), "reference ", ref.dir, " was run with another model or data config:",
               diffs);
  }
  MetricsFile m = read_metrics(run_dir);
  OLMO_CHECK(!m.train.empty(), run_dir, ": no train records in metrics.jsonl");
  OLMO_CHECK(m.train.begin()->second.contains("instances"), run_dir,
             ": train records carry no instance indices: train with trainer.log_batch_indices=true");
  data::FslOptions opt;
  opt.eos_id = uint32_t(ours.data.eos_id);
  opt.pad_id = uint32_t(ours.data.pad_id);
  opt.validate = false;
  data::FslDataset ds(data::expand_token_paths(ours.data.mix), ours.data.seq_len,
                      uint32_t(ours.model.arch.vocab_size), opt);

  auto fail = [&](int64_t s, const std::string& q, const std::string& a, const std::string& b,
                  const std::string& bound) { out.failures.push_back({s, q, a, b, bound}); };
  auto close = [&](int64_t s, const std::string& q, double a, double b,
                   const std::string& floor_key = "", double rel = kRelSlack) {
    const FloorEnvelope e = reference_envelope(ref, floor_key.empty() ? q : floor_key, s);
    const double env = e.value;
    const double bound = std::isfinite(env) ? mult * env + rel * std::fabs(b) : env;
    auto& sum = out.summary[q];
    if (!std::isfinite(a) && !std::isfinite(b)) return;
    ++sum.checked;
    const double d = std::fabs(a - b);
    if (!(d <= bound)) {  // NaN (one side non-finite, or no floor) fails too
      fail(s, q, g(a), g(b),
           std::isfinite(bound) ? cat(g(bound), " (floor set by ", e.set_by, ")") : "no noise floor");
    }
    if (std::isfinite(d) && d > sum.max_abs) sum.max_abs = d, sum.max_abs_step = s;
    if (std::isfinite(env)) {
      sum.max_floor = std::max(sum.max_floor, env);
      // The floor cannot be resolved below one fp32 ulp of the recorded value.
      const double unit = std::max(env, std::fabs(b) * 0x1p-23);
      const double ratio = unit > 0 ? d / unit : 0;
      if (ratio > sum.max_ratio || sum.max_ratio_step == 0)
        sum.max_ratio = ratio, sum.max_ratio_step = s, sum.floor_by = e.set_by;
    }
  };
  auto exact = [&](int64_t s, const std::string& q, bool same, const std::string& a,
                   const std::string& b) {
    ++out.summary[q].checked;
    if (!same) fail(s, q, a, b, "exact");
  };

  // A run resumed from a migrated checkpoint starts later: the steps before its first are not
  // its own and are not compared.
  const int64_t first = m.train.begin()->first;
  out.first_step = first;
  for (auto& [s, rr] : ref.train) {
    if (s < first) continue;
    auto it = m.train.find(s);
    if (it == m.train.end()) {
      fail(s, "step", "(missing)", "present", "exact");
      continue;
    }
    const json& r = it->second;
    ++out.steps;
    std::vector<int64_t> ia = r.value("instances", std::vector<int64_t>{});
    std::vector<int64_t> ib = rr.value("instances", std::vector<int64_t>{});
    exact(s, "instances", ia == ib, json(ia).dump(), json(ib).dump());
    if (rr.contains("tokens_digest") && ia == ib) {
      bool in_range = true;
      for (int64_t i : ia) in_range = in_range && i >= 0 && i < ds.size();
      const std::string da = in_range ? std::to_string(digest_of(ds, ia)) : "(index out of range)";
      const std::string db = rr["tokens_digest"].get<std::string>();
      exact(s, "tokens_digest", da == db, da, db);
    }
    const double la = numv(r, "lr"), lb = numv(rr, "lr");
    exact(s, "lr", la == lb, g(la), g(lb));
    const bool ka = r.value("skipped", false), kb = rr.value("skipped", false);
    exact(s, "skipped", ka == kb, ka ? "true" : "false", kb ? "true" : "false");
    for (const char* q : {"loss", "z_loss"}) close(s, cat("train.", q), numv(r, q), numv(rr, q));
    // OLMo-core logs its grad norm from torch's fp32 clip_grad_norm_ (~5e-6 relative error at
    // d_model 128); the reference also records the float64 norm of the same gradient.
    if (rr.contains("grad_norm_f64") && rr["grad_norm_f64"].is_number() &&
        ref.floor.count("train.grad_norm_f64"))
      close(s, "train.grad_norm", numv(r, "grad_norm"), numv(rr, "grad_norm_f64"),
            "train.grad_norm_f64");
    else
      close(s, "train.grad_norm", numv(r, "grad_norm"), numv(rr, "grad_norm"));
  }
  // Per parameter group weight and update RMS (monitor/param_rms.h), at every step the reference
  // recorded: a step missing here is a violation (the run was trained with another
  // trainer.param_rms_interval).
  for (auto& [s, pr] : ref.param_rms) {
    if (s < first) continue;
    auto it = m.param_rms.find(s);
    if (it == m.param_rms.end()) {
      fail(s, "param_rms record", "(missing: trainer.param_rms_interval)", "present", "exact");
      continue;
    }
    for (const char* part : {"weight", "update"}) {
      const double rel = part == std::string("update") ? kUpdateRelSlack : kRelSlack;
      if (pr.contains(part) && pr[part].is_object())
        for (auto& [group, x] : pr[part].items())
          close(s, cat("param_rms.", part, ".", group),
                it->second.contains(part) ? numv(it->second[part], group) : std::nan(""),
                numv(pr[part], group), "", rel);
    }
  }
  if (!ref.validation.empty()) {
    std::map<int64_t, json> ours_v;
    if (fs::exists(fs::path(run_dir) / "validation.jsonl")) ours_v = read_validation_records(run_dir);
    for (auto& [s, vr] : ref.validation) {
      if (s < first) continue;
      auto it = ours_v.find(s);
      if (it == ours_v.end()) {
        fail(s, "validation record", "(missing)", "present", "exact");
        continue;
      }
      const json& v = it->second;
      for (const char* part : {"heldout", "gap"})
        if (vr.contains(part))
          for (auto& [set, x] : vr[part].items())
            close(s, cat("validation.", part, ".", set),
                  v.contains(part) ? numv(v[part], set) : std::nan(""), numv(vr[part], set));
      close(s, "validation.model_entropy", numv(v, "model_entropy"), numv(vr, "model_entropy"));
      close(s, "validation.marginal_entropy_bits", numv(v, "marginal_entropy_bits"),
            numv(vr, "marginal_entropy_bits"));
      const double sa = numv(v, "served_entropy_bits"), sb = numv(vr, "served_entropy_bits");
      if (v.value("window_steps", -1) == vr.value("window_steps", -2))
        exact(s, "validation.served_entropy_bits", std::fabs(sa - sb) <= 1e-9, g(sa), g(sb));
    }
  }
  // Earliest first (train, param_rms and validation checks each ran in step order).
  std::stable_sort(out.failures.begin(), out.failures.end(),
                   [](const Deviation& x, const Deviation& y) { return x.step < y.step; });
  return out;
}

}  // namespace olmo::train
