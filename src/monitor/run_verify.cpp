// `olmo verify`: re-execute a span of a run and check it bit for bit (see run_verify.h).
#include "monitor/run_verify.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <system_error>

#include <nlohmann/json.hpp>

#include "ckpt/checkpoint.h"
#include "ckpt/state_diff.h"
#include "core/error.h"
#include "core/hash.h"
#include "monitor/audit_callback.h"
#include "monitor/callbacks.h"
#include "train/config.h"
#include "train/trainer.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace olmo::train {

int64_t parse_step(const std::string& s, const std::string& what) {
  const std::string digits = s.rfind("step", 0) == 0 ? s.substr(4) : s;
  OLMO_CHECK(!digits.empty() && digits.size() < 19 &&
                 digits.find_first_not_of("0123456789") == std::string::npos,
             what, ": '", s, "' is not a step (stepN or N)");
  return std::stoll(digits);
}

namespace {

std::string step_dir(const std::string& run, int64_t step) { return cat(run, "/step", step); }

// RUN/metrics.jsonl's train records: step -> "state_fingerprint" (records without one are
// absent), and the last step recorded at all.
struct Recorded {
  std::map<int64_t, std::string> fp;
  int64_t last_step = 0;
  bool file = false;
};

Recorded read_recorded(const std::string& run) {
  Recorded rec;
  std::ifstream in(run + "/metrics.jsonl");
  rec.file = bool(in);
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"train\"") == std::string::npos) continue;
    const json j = json::parse(line, nullptr, false);
    if (!j.is_object() || j.value("kind", "") != "train" || !j.contains("step") ||
        !j["step"].is_number_integer())
      continue;
    const int64_t s = j["step"].get<int64_t>();
    rec.last_step = std::max(rec.last_step, s);
    if (j.contains("state_fingerprint") && j["state_fingerprint"].is_string())
      rec.fp[s] = j["state_fingerprint"].get<std::string>();
  }
  return rec;
}

// The scratch dir: o.scratch (must not exist or be empty, and lie outside RUN) or a new one
// under the system's temporary dir.
std::string make_scratch(const RunVerifyOptions& o) {
  if (o.scratch.empty()) {
    std::string tmpl = (fs::temp_directory_path() / "olmo-verify-XXXXXX").string();
    OLMO_CHECK(::mkdtemp(tmpl.data()) != nullptr, "cannot create a scratch dir under ",
               fs::temp_directory_path().string(), " (give one with --scratch DIR)");
    return tmpl;
  }
  const fs::path run = fs::weakly_canonical(o.run_dir), s = fs::weakly_canonical(o.scratch);
  const std::string rs = run.string() + "/", ss = s.string() + "/";
  OLMO_CHECK(ss.rfind(rs, 0) != 0 && rs.rfind(ss, 0) != 0, "scratch dir ", o.scratch,
             " overlaps the run dir ", o.run_dir,
             ": the re-execution never writes into the run it checks (choose another --scratch)");
  std::error_code ec;
  OLMO_CHECK(!fs::exists(s) || (fs::is_directory(s) && fs::is_empty(s, ec)), "scratch dir ",
             o.scratch, " exists and is not an empty directory (the re-execution writes a run "
             "dir there: give a new or empty one)");
  fs::create_directories(s, ec);
  OLMO_CHECK(!ec, "cannot create scratch dir ", o.scratch, ": ", ec.message());
  return s.string();
}

// Compares each step's state fingerprint and each checkpoint the re-execution commits with what
// RUN recorded; the first difference stops the run.
class SpanCheck final : public Callback {
 public:
  SpanCheck(const RunVerifyOptions& o, const Recorded& rec, RunVerifyReport& rep,
            const std::function<void(const std::string&)>& note)
      : o_(o), rec_(rec), rep_(rep), note_(note) {}
  std::string name() const override { return "span_check"; }

  void on_start(Trainer& t) override {
    OLMO_CHECK(t.start_kind() == StartKind::resume && t.step() == o_.from, "the re-execution "
               "did not resume from step ", o_.from, " (it started at step ", t.step(), ")");
    OLMO_CHECK(t.world() == 1, "olmo verify runs in one process (the bits do not depend on the "
               "world size); run it without mpirun");
    OLMO_CHECK(t.total_steps() >= o_.to, "the run's config stops at step ", t.total_steps(),
               ": nothing to re-execute up to step ", o_.to);
    check_fingerprint(t, o_.from, t.state_digest());  // the state loaded from stepA
  }
  void on_step(Trainer& t, const StepResult& r) override {
    ++rep_.steps_run;
    check_fingerprint(t, r.step, r.state_fingerprint);
  }
  void post_checkpoint(Trainer& t, const std::string& dir) override {
    const int64_t step = t.last_save().step;
    const std::string want = step_dir(o_.run_dir, step);
    if (!rep_.ok() || step <= o_.from) return;
    if (!ckpt::is_committed(want)) {
      note_(cat("step ", step, ": ", o_.run_dir, " holds no checkpoint of this step (not kept): "
                "its state fingerprint is what is compared"));
      return;
    }
    ckpt::CheckpointReader w(want);
    try {
      w.verify();
    } catch (const Error& e) {
      found(t, step, "", cat("checkpoint ", want, " is damaged: ", e.what()));
      return;
    }
    const ckpt::StateDiff d = ckpt::diff_state(w, ckpt::CheckpointReader(dir));
    if (!d.same) {
      found(t, step, d.tensor, cat("checkpoint ", want, " differs from the re-execution: ", d.what));
      return;
    }
    rep_.checkpoints_checked.push_back(step);
    note_(cat("step ", step, ": checkpoint ", want, " reproduced bit for bit (every tensor and "
              "state section)"));
  }

 private:
  void check_fingerprint(Trainer& t, int64_t step, uint64_t have) {
    if (!rep_.ok()) return;
    auto it = rec_.fp.find(step);
    if (it == rec_.fp.end()) {
      if (step > o_.from) rep_.steps_unrecorded.push_back(step);
      return;
    }
    if (it->second == hex64(have)) {
      ++rep_.fingerprints_checked;
      return;
    }
    found(t, step, "", cat("the state fingerprint after step ", step, " differs: ", o_.run_dir,
                           "/metrics.jsonl recorded ", it->second, ", the re-execution has ",
                           hex64(have), step == o_.from ? " (the state loaded from the checkpoint "
                           "is not the state the run recorded at this step)" : "",
                           " (one value for the whole state: it names the step, not a tensor; "
                           "a checkpoint of that step would name it)"));
  }
  void found(Trainer& t, int64_t step, const std::string& tensor, const std::string& what) {
    rep_.finding = cat("step ", step, ": ", what);
    rep_.finding_step = step;
    rep_.finding_tensor = tensor;
    t.request_stop();
  }

  const RunVerifyOptions& o_;
  const Recorded& rec_;
  RunVerifyReport& rep_;
  const std::function<void(const std::string&)>& note_;
};

}  // namespace

RunVerifyReport verify_run(const RunVerifyOptions& o,
                           const std::function<void(const std::string&)>& note) {
  RunVerifyReport rep;
  OLMO_CHECK(fs::is_directory(o.run_dir), o.run_dir, ": not a directory (give the run dir of a "
             "training run: its config.yaml, metrics.jsonl and stepN checkpoints)");
  const std::string config = o.run_dir + "/config.yaml";
  OLMO_CHECK(fs::is_regular_file(config), o.run_dir, ": no config.yaml (not the run dir of a "
             "training run; `olmo train` writes its resolved config there)");
  OLMO_CHECK(o.from >= 0, "the step to start from is required (--from stepA)");
  const std::vector<int64_t> ckpts = ckpt::list_checkpoints(o.run_dir);
  const std::string from_dir = step_dir(o.run_dir, o.from);
  if (!ckpt::is_committed(from_dir)) {
    std::string have;
    for (int64_t s : ckpts) have += cat(have.empty() ? "" : ", ", "step", s);
    throw Error(cat(o.run_dir, ": no complete checkpoint step", o.from, " to start from (",
                    have.empty() ? std::string("the run dir holds none") : "it holds " + have, ")"));
  }
  const Recorded rec = read_recorded(o.run_dir);
  rep.from = o.from;
  rep.to = o.to;
  if (rep.to < 0) rep.to = std::max(ckpts.empty() ? int64_t(0) : ckpts.back(), rec.last_step);
  OLMO_CHECK(rep.to > o.from, o.run_dir, ": nothing recorded after step ", o.from,
             o.to < 0 ? " (no later checkpoint or metrics record)" : "", "; --to must be after --from");
  bool any = false;
  for (int64_t s : ckpts) any |= s > o.from && s <= rep.to;
  for (const auto& [s, fp] : rec.fp) any |= s > o.from && s <= rep.to;
  OLMO_CHECK(any, o.run_dir, ": nothing to check the steps ", o.from + 1, "..", rep.to,
             " against: no checkpoint of them and no state fingerprint in ",
             rec.file ? "metrics.jsonl (written by an older olmo.cpp?)" : "a metrics.jsonl (absent)");

  // The starting checkpoint must hold what was saved before anything is re-executed from it.
  ckpt::CheckpointReader start(from_dir);
  start.verify();
  std::string precision;
  if (start.has_json("recipe") && start.json("recipe").contains("fields") &&
      start.json("recipe")["fields"].contains("model.precision"))
    precision = start.json("recipe")["fields"]["model.precision"].get<std::string>();

  rep.scratch = make_scratch(o);
  note(cat("verify: re-executing steps ", o.from + 1, "..", rep.to, " of ", o.run_dir, " from ",
           from_dir, " in ", rep.scratch, " (", rec.fp.size(), " state fingerprints and ",
           ckpts.size(), " checkpoints recorded)"));
  try {
    fs::copy(from_dir, step_dir(rep.scratch, o.from), fs::copy_options::recursive);
    std::vector<std::string> ov = {"trainer.run_dir=" + rep.scratch,
                                   cat("trainer.hard_stop_steps=", rep.to),
                                   "trainer.peak_interval=-1"};
    if (!precision.empty()) ov.push_back("model.precision=" + precision);
    Trainer t(load_config(config, ov));
    // The callbacks that write or change the state (run dir records, the audits' data faults,
    // checkpoints: the standard set of callbacks.cpp without its readers), then the checks.
    t.add_callback(std::make_unique<ConfigSaver>());
    t.add_callback(std::make_unique<MetricsLogger>());
    install_fault_injection(t);
    t.add_callback(std::make_unique<Checkpointer>());
    t.add_callback(std::make_unique<SpanCheck>(o, rec, rep, note));
    t.fit();
  } catch (...) {  // an error: the scratch dir goes unless asked to keep it
    std::error_code ec;
    if (!o.keep_scratch) fs::remove_all(rep.scratch, ec);
    throw;
  }
  rep.scratch_kept = o.keep_scratch || !rep.ok();
  if (!rep.scratch_kept) {
    std::error_code ec;
    fs::remove_all(rep.scratch, ec);
  }
  return rep;
}

}  // namespace olmo::train
