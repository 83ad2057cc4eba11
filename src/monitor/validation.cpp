// Validation checkpoints and reference comparison (see validation.h).
#include "monitor/validation.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/file_io.h"
#include "core/timer.h"
#include "data/eval_dataset.h"
#include "data/token_paths.h"
#include "monitor/audit_callback.h"
#include "model/olmo3.h"
#include "train/metrics_log.h"
#include "train/progress.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace olmo::train {

static json num(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }

std::map<std::string, std::string> comparable_config(const Config& c) {
  // to_yaml prints every field as "  leaf: value" under "section:"; keep model.* and data.*.
  std::map<std::string, std::string> out;
  std::string section;
  std::istringstream in(to_yaml(c));
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    if (line[0] != ' ') {
      auto colon = line.find(':');
      section = line.substr(0, colon);
      if (colon + 1 < line.size()) section = "";  // a top-level scalar
      continue;
    }
    if (section != "model" && section != "data") continue;
    auto colon = line.find(':');
    std::string leaf = line.substr(2, colon - 2);
    if (leaf.rfind("fault_", 0) == 0 || leaf == "inject_fault" || leaf == "processes") continue;
    out[section + "." + leaf] = line.substr(colon + 2);
  }
  return out;
}

std::map<int64_t, json> read_validation_records(const std::string& run_dir) {
  std::string path = (fs::path(run_dir) / "validation.jsonl").string();
  OLMO_CHECK(fs::exists(path), path, ": no validation records (was the run trained with "
             "validation.interval > 0 and a held-out set?)");
  std::map<int64_t, json> out;
  std::ifstream f(path);
  int64_t line_no = 0;
  for (std::string line; std::getline(f, line);) {
    ++line_no;
    if (line.empty()) continue;
    json j;
    try {
      j = json::parse(line);
    } catch (const std::exception& e) {
      throw Error(cat(path, ":", line_no, ": not a JSON record: ", e.what()));
    }
    OLMO_CHECK(j.contains("step"), path, ":", line_no, ": record without a step");
    out[j["step"].get<int64_t>()] = j;
  }
  return out;
}

std::map<int64_t, json> load_reference(const Config& c, const std::string& run_dir) {
  std::string cfg_path = (fs::path(run_dir) / "config.yaml").string();
  OLMO_CHECK(fs::exists(cfg_path), "validation.reference: ", run_dir,
             " is not a run dir (no config.yaml)");
  Config ref = load_config(cfg_path);
  auto a = comparable_config(c), b = comparable_config(ref);
  for (auto& [k, v] : a) {
    auto it = b.find(k);
    OLMO_CHECK(it != b.end() && it->second == v, "validation.reference: ", run_dir,
               " was trained with another model or data config: ", k, " = ",
               it == b.end() ? "(absent)" : it->second, " there, ", v, " here");
  }
  auto recs = read_validation_records(run_dir);
  OLMO_CHECK(!recs.empty(), "validation.reference: ", run_dir, "/validation.jsonl has no records");
  return recs;
}

// The canary exposure the benchmarks callback (monitor/benchmark_callback.h, registered before
// this one, same interval by default) logged for `step`: {count: mean bits} from the last
// {"kind":"exposure"} record of that step in the tail of metrics.jsonl; null when none.
static json exposure_at(const std::string& metrics_path, int64_t step) {
  std::ifstream f(metrics_path, std::ios::binary);
  if (!f) return nullptr;
  f.seekg(0, std::ios::end);
  const std::streamoff size = f.tellg(), tail = std::min<std::streamoff>(size, 1 << 18);
  f.seekg(size - tail);
  std::string buf(size_t(tail), '\0');
  f.read(buf.data(), tail);
  json found = nullptr;
  std::istringstream in(buf);
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"exposure\"") == std::string::npos) continue;
    try {
      json j = json::parse(line);
      if (j.value("kind", "") != "exposure" || j.value("step", int64_t(-1)) != step) continue;
      json ex = json::object();
      for (auto& [count, s] : j["by_count"].items()) ex[count] = s.value("mean", json(nullptr));
      found = ex;
    } catch (...) {
    }
  }
  return found;
}

void Validation::on_start(Trainer& t) {
  const Config& c = t.config();
  if (c.validation.interval <= 0 || t.rank() != 0) return;
  std::map<std::string, std::string> sets = c.validation.sets.empty() ? c.eval.sets
                                                                      : c.validation.sets;
  if (sets.empty()) {
    t.progress().message("validation: no held-out sets (validation.sets / eval.sets): off");
    return;
  }
  if (!c.validation.reference.empty()) {
    reference_ = load_reference(c, c.validation.reference);
    if (is_reference_run(c.validation.reference))
      ref_run_ = std::make_unique<ReferenceRun>(load_reference_run(c.validation.reference));
  }
  data::FslOptions opt;
  opt.eos_id = uint32_t(c.data.eos_id);
  opt.pad_id = uint32_t(c.data.pad_id);
  const uint32_t V = uint32_t(t.model().config().vocab_size);
  for (auto& [label, p] : sets)
    sets_.push_back(std::make_unique<eval::LmEvaluator>(label, p, c.data.seq_len, V, opt,
                                                        c.validation.max_instances,
                                                        c.eval.batch_instances));
  // The fixed validation batch: the first documents of the first set.
  data::EvalDataset ds(data::expand_token_paths(sets.begin()->second), c.data.seq_len, V, opt);
  audit::TokenHistogram h(V);
  std::vector<int32_t> ids(size_t(c.data.seq_len));
  for (int64_t i = 0; i < std::min(ds.size(), c.validation.entropy_instances); ++i) {
    ds.read(i, ids.data(), nullptr, nullptr);
    int64_t n = ds.length(i);
    fixed_.emplace_back(ids.begin(), ids.begin() + n);
    h.add(ids.data(), n);
  }
  batch_entropy_ = h.entropy_bits();
  served_ = audit::TokenHistogram(V);
  // Resume: drop records after the resumed step.
  path_ = (fs::path(t.run_dir()) / "validation.jsonl").string();
  if (fs::exists(path_)) {
    std::string kept;
    std::ifstream f(path_);
    for (std::string line; std::getline(f, line);) {
      try {
        json j = json::parse(line);
        if (j.value("step", int64_t(-1)) <= t.step()) kept += line + "\n";
      } catch (...) {
      }
    }
    write_file_atomic(path_, kept);
  }
  last_step_ = t.step();
  active_ = true;
}

void Validation::on_step(Trainer& t, const StepResult& r) {
  if (!active_) return;
  const auto& b = t.last_batch();
  served_.add(b.tokens.data(), int64_t(b.tokens.size()));
  loss_sum_ += r.loss;
  ++window_;
  int64_t every = t.config().validation.interval;
  if (r.step % every == 0 && r.step != t.total_steps()) record(t);
}

// The last step's record comes after the other callbacks' end-of-run work (the benchmarks'
// exposure among it), as the evaluator's does.
void Validation::on_end(Trainer& t) {
  if (active_ && last_step_ != t.step()) record(t);
}

json Validation::record(Trainer& t) {
  const double t0 = now_seconds();
  json rec = {{"step", t.step()}, {"window_steps", window_}};
  double train_loss = window_ ? loss_sum_ / double(window_) : std::nan("");
  json held = json::object(), gap = json::object();
  for (auto& s : sets_) {
    eval::EvalResult er = s->run(t.model());
    held[er.label] = num(er.loss);
    gap[er.label] = num(train_loss - er.loss);
  }
  // Model entropy on the fixed batch, one document at a time (T x V logits).
  const int64_t V = t.model().config().vocab_size;
  std::vector<float> logits;
  std::vector<double> marginal(size_t(V), 0.0);
  double hsum = 0;
  int64_t positions = 0;
  for (auto& doc : fixed_) {
    const int64_t n = int64_t(doc.size());
    logits.resize(size_t(n * V));
    t.model().forward_logits(doc.data(), 1, n, logits.data());
    for (int64_t p = 0; p < n; ++p) {
      const float* z = logits.data() + p * V;
      double mx = z[0];
      for (int64_t v = 1; v < V; ++v) mx = std::max(mx, double(z[v]));
      double se = 0, sz = 0;
      for (int64_t v = 0; v < V; ++v) {
        double e = std::exp(double(z[v]) - mx);
        se += e;
        sz += e * (double(z[v]) - mx);
      }
      hsum += std::log(se) - sz / se;  // H = log Z - E[z - mx]
      for (int64_t v = 0; v < V; ++v) marginal[size_t(v)] += std::exp(double(z[v]) - mx) / se;
      ++positions;
    }
  }
  double marg_h = 0;
  for (double m : marginal)
    if (m > 0 && positions) {
      double p = m / double(positions);
      marg_h -= p * std::log2(p);
    }
  rec["heldout"] = held;
  rec["model_entropy"] = num(positions ? hsum / double(positions) : std::nan(""));
  rec["marginal_entropy_bits"] = num(marg_h);
  rec["batch_entropy_bits"] = batch_entropy_;
  rec["served_entropy_bits"] = served_.entropy_bits();
  rec["served_tokens"] = served_.total();
  rec["train_loss"] = num(train_loss);
  rec["gap"] = gap;
  if (json ex = exposure_at(t.metrics().path(), t.step()); !ex.is_null()) rec["exposure"] = ex;
  rec["seconds"] = now_seconds() - t0;
  {
    std::ofstream f(path_, std::ios::app);
    f << rec.dump() << "\n";
    OLMO_CHECK(f.good(), "cannot append to ", path_);
  }
  json m = rec;
  m["kind"] = "validation";
  t.metrics().write(m);
  std::string hs;
  for (auto& [k, v] : held.items())
    hs += cat(" ", k, " ", v.is_number() ? v.get<double>() : NAN);
  t.progress().message(cat("validation step ", t.step(), ": held-out", hs, " | train ", train_loss,
                           " | model entropy ", rec["model_entropy"].is_number()
                                                    ? rec["model_entropy"].get<double>() : NAN,
                           " nats | served ", served_.entropy_bits(), " bits"));
  compare(t, rec);
  served_.clear();
  loss_sum_ = 0;
  window_ = 0;
  last_step_ = t.step();
  return rec;
}

static double getd(const json& j, const std::string& k) {
  return j.contains(k) && j[k].is_number() ? j[k].get<double>() : std::nan("");
}

// Against an OLMo-core reference run: noise-floor bounds (monitor/reference_run.h).
void Validation::compare_to_reference_run(Trainer& t, const json& rec, const json& ref) {
  const bool stop = t.config().validation.stop_on_alarm;
  const int64_t step = rec["step"].get<int64_t>();
  auto check = [&](const std::string& q, double a, double b) {
    if (!std::isfinite(b)) return;
    const double mult = t.config().validation.reference_floor_multiple;
    const double bound = reference_bound(*ref_run_, "validation." + q, step, b, mult);
    if (!(std::fabs(a - b) <= bound))
      raise_alarm(t, "validation", q,
                  cat(q, " ", a, " vs OLMo-core reference ", b, " (|diff| ", std::fabs(a - b),
                      " > bound ", bound, " = ", mult, " noise floors)"),
                  stop);
  };
  for (const char* part : {"heldout", "gap"})
    if (ref.contains(part))
      for (auto& [set, x] : ref[part].items())
        check(cat(part, ".", set), rec[part].contains(set) ? getd(rec[part], set) : std::nan(""),
              getd(ref[part], set));
  check("model_entropy", getd(rec, "model_entropy"), getd(ref, "model_entropy"));
  check("marginal_entropy_bits", getd(rec, "marginal_entropy_bits"),
        getd(ref, "marginal_entropy_bits"));
  const double sa = getd(rec, "served_entropy_bits"), sb = getd(ref, "served_entropy_bits");
  if (rec.value("window_steps", int64_t(-1)) == ref.value("window_steps", int64_t(-2)) &&
      !(std::fabs(sa - sb) <= 1e-9))
    raise_alarm(t, "validation", "served_entropy",
                cat("served entropy ", sa, " vs OLMo-core reference ", sb,
                    " bits: the served tokens differ"),
                stop);
}

void Validation::compare(Trainer& t, const json& rec) {
  const auto& v = t.config().validation;
  const bool stop = v.stop_on_alarm;
  auto check = [&](const std::string& cause, double a, double b, double tol, const char* unit) {
    if (std::isfinite(a) && std::isfinite(b) && std::fabs(a - b) > tol)
      raise_alarm(t, "validation", cause,
                  cat(cause, " ", a, " vs reference ", b, " ", unit, " (|diff| ", std::fabs(a - b),
                      " > tol ", tol, ")"),
                  stop);
  };
  if (v.max_gap > 0)
    for (auto& [set, g] : rec["gap"].items())
      if (g.is_number() && -g.get<double>() > v.max_gap)
        raise_alarm(t, "validation", "gap_too_large",
                    cat("held-out '", set, "' loss exceeds the train loss by ", -g.get<double>(),
                        " nats (> validation.max_gap ", v.max_gap, "): loss looks too good"),
                    stop);
  if (reference_.empty()) return;
  auto it = reference_.find(rec["step"].get<int64_t>());
  if (it == reference_.end()) {
    t.progress().message(cat("validation: the reference has no record at step ", rec["step"]));
    return;
  }
  const json& ref = it->second;
  if (ref_run_) {
    compare_to_reference_run(t, rec, ref);
    return;
  }
  for (auto& [set, l] : rec["heldout"].items())
    if (ref.contains("heldout") && ref["heldout"].contains(set))
      check("heldout_loss." + set, getd(rec["heldout"], set), getd(ref["heldout"], set),
            v.tol_loss, "nats");
  for (auto& [set, g] : rec["gap"].items())
    if (ref.contains("gap") && ref["gap"].contains(set))
      check("gap." + set, getd(rec["gap"], set), getd(ref["gap"], set), v.tol_gap, "nats");
  // Served entropy depends on the window length (plug-in estimate): compare equal windows only
  // (a resumed run's first window is shorter).
  if (rec.value("window_steps", int64_t(-1)) == ref.value("window_steps", int64_t(-2)))
    check("served_entropy", getd(rec, "served_entropy_bits"), getd(ref, "served_entropy_bits"),
          v.tol_entropy, "bits");
  check("model_entropy", getd(rec, "model_entropy"), getd(ref, "model_entropy"), v.tol_entropy,
        "nats");
}

}  // namespace olmo::train
