// `olmo audit RUN_DIR [--held-out LABEL=PATH[,LABEL=PATH...]] [--no-distribution] [--json]`: the
// offline data-loader audit of a finished (or running) run, fsl or packed_fsl. Reads
// RUN_DIR/config.yaml, rebuilds the dataset as the run saw it (train/training_data.h) and runs
// audit::audit_run (src/audit/audit_run.h: every ledger step against the numpy order with a
// re-read of every row, ledger coverage, served distribution, held-out contamination of
// eval.sets, validation.sets and --held-out).
// Exit status: 0 clean, 3 with findings (each printed as "FINDING kind step: detail"), 1 on an
// error (missing run dir, config or ledger; a held-out set that does not exist), 2 usage.
#include <cstdio>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "audit/audit_run.h"
#include "cli_app.h"
#include "command.h"
#include "core/error.h"
#include "data/token_paths.h"
#include "train/config.h"
#include "train/model_setup.h"
#include "train/training_data.h"

namespace fs = std::filesystem;
using olmo::cat;

namespace {

// label -> path of the config's held-out sets plus --held-out LABEL=PATH,...
std::map<std::string, std::string> held_out_sets(const olmo::train::Config& c,
                                                 const std::string& extra) {
  std::map<std::string, std::string> sets = c.eval.sets;
  for (auto& [k, v] : c.validation.sets) sets[k] = v;
  for (std::string rest = extra; !rest.empty();) {
    auto comma = rest.find(',');
    std::string kv = rest.substr(0, comma);
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    auto eq = kv.find('=');
    OLMO_CHECK(eq != std::string::npos, "audit: --held-out wants LABEL=PATH, got '", kv, "'");
    sets[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (auto& [label, p] : sets)
    OLMO_CHECK(fs::exists(p), "audit: held-out set '", label, "' not found: ", p);
  return sets;
}

int run_audit(int argc, char** argv) {
  auto app = olmo::cli::make_app(
      "audit",
      "Offline audit of a run's data loader (fsl or packed_fsl): every step of the batch ledger "
      "against the numpy order with a re-read of every row, ledger coverage, the served "
      "distribution, and held-out contamination (the config's eval.sets and validation.sets, "
      "plus --held-out).");
  std::string run, held_out;
  bool json = false, no_distribution = false;
  app->add_option("RUN_DIR", run, "the run directory (config.yaml, audit/ledger.bin)")->required();
  app->add_option("--held-out", held_out, "more held-out sets: LABEL=PATH[,LABEL=PATH...]");
  app->add_flag("--no-distribution", no_distribution, "skip the served-distribution checks");
  app->add_flag("--json", json, "print the report as JSON");
  app->footer("exit: 0 clean, 3 findings (each printed as FINDING kind step: detail), 1 error");
  olmo::cli::parse(*app, argc, argv);
  OLMO_CHECK(fs::is_directory(run), "audit: run dir not found: ", run);
  const std::string cfg_path = (fs::path(run) / "config.yaml").string();
  OLMO_CHECK(fs::exists(cfg_path), "audit: ", run, " has no config.yaml (not a run dir?)");
  olmo::train::Config c = olmo::train::load_config(cfg_path);
  OLMO_CHECK(fs::exists((fs::path(run) / "audit" / "ledger.bin")), "audit: ", run,
             " has no batch ledger (", (fs::path(run) / "audit" / "ledger.bin").string(),
             "): the run was trained without the audit (audit.enabled: false) or before it "
             "existed");

  // The dataset as the run saw it (fsl or packed_fsl).
  olmo::data::DatasetSpec spec =
      olmo::train::dataset_spec(c, uint32_t(olmo::train::model_config(c).vocab_size));
  spec.validate = false;
  auto ds = olmo::data::open_instance_source(spec);
  const auto sets = held_out_sets(c, held_out);

  olmo::audit::AuditInputs in;
  in.run_dir = run;
  in.dataset = ds.get();
  in.global_batch = olmo::train::batch_instances(c);
  in.seed = uint64_t(c.data.seed);
  in.eos_id = uint32_t(c.data.eos_id);
  in.entropy_tol_bits = c.audit.entropy_tol_bits;
  in.top_share_tol = c.audit.top_share_tol;
  in.ngram_threshold = c.audit.ngram_threshold;
  for (auto& [label, p] : sets) in.held_out[label] = olmo::data::expand_token_paths(p);
  in.distribution = !no_distribution;
  olmo::audit::AuditReport rep = olmo::audit::audit_run(in);

  if (json) {
    nlohmann::json j = {{"run", run}, {"steps", rep.records},
                        {"dataset", olmo::train::choice_name(c.data.dataset)},
                        {"clean", rep.clean()}, {"notes", rep.notes},
                        {"findings", nlohmann::json::array()}};
    for (auto& f : rep.findings)
      j["findings"].push_back({{"kind", f.kind}, {"step", f.step}, {"detail", f.detail}});
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("audit %s: %lld ledger records (steps %lld..%lld), %lld %s instances, %zu "
                "held-out set(s)\n",
                run.c_str(), (long long)rep.records, (long long)rep.first_step,
                (long long)rep.last_step, (long long)ds->size(),
                olmo::train::choice_name(c.data.dataset).c_str(), sets.size());
    for (auto& n : rep.notes) std::printf("  note: %s\n", n.c_str());
    std::map<std::string, int64_t> per;
    for (auto& f : rep.findings)
      if (++per[f.kind] <= 50)
        std::printf("FINDING %s step %lld: %s\n", f.kind.c_str(), (long long)f.step,
                    f.detail.c_str());
    for (auto& [k, n] : per)
      if (n > 50) std::printf("  (%lld %s findings in all)\n", (long long)n, k.c_str());
    std::printf("%s\n",
                rep.clean() ? "clean" : cat(rep.findings.size(), " findings").c_str());
  }
  return rep.clean() ? olmo::cli::kExitOk : olmo::cli::kExitFindings;
}

OLMO_COMMAND("audit", "offline data-loader audit of a run dir (exit 0 clean, 3 findings)",
             run_audit);

}  // namespace
