// `olmo audit RUN_DIR [--held-out LABEL=PATH[,LABEL=PATH...]] [--json]`: the offline data-loader audit of a
// finished (or running) run. Reads RUN_DIR/config.yaml, RUN_DIR/audit/ledger.bin (written by the
// in-loop audit, train/audit_callback.h) and RUN_DIR/metrics.jsonl, rebuilds the dataset and the
// numpy global order independently, and checks every step (audit/checks.h) with a re-read of
// EVERY row (the ledger's row hashes against the token files), that the ledger covers every
// trained step, the served unigram distribution of the whole run against the corpus (prepare's
// index), and contamination of the held-out sets (eval.sets, validation.sets, --held-out) and
// duplicates across mix entries (audit/corpus_index.h).
// Exit status: 0 clean, 2 with findings (each printed as "FINDING kind step: detail"), 1 on an
// error (missing run dir, config or ledger; a held-out set that does not exist).
// Cost: one read of every served token (memory-mapped) and of the prepare index.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "args.h"
#include "audit/checks.h"
#include "audit/corpus_index.h"
#include "audit/ledger.h"
#include "command.h"
#include "core/error.h"
#include "data/token_paths.h"
#include "train/config.h"
#include "train/model_setup.h"

namespace fs = std::filesystem;
using olmo::cat;

namespace {

int run_audit(int argc, char** argv) {
  olmo::cli::Args a(argc, argv, {"--json", "--no-distribution"});
  if (a.has("--help") || a.positional().size() != 1) {
    std::printf(
        "usage: olmo audit RUN_DIR [--held-out LABEL=PATH,...] [--no-distribution] [--json]\n"
        "  exit 0: clean; 2: findings (listed); 1: error\n");
    return a.has("--help") ? 0 : 1;
  }
  a.finish({"--held-out", "--json", "--no-distribution"});
  const std::string run = a.positional()[0];
  OLMO_CHECK(fs::is_directory(run), "audit: run dir not found: ", run);
  const std::string cfg_path = (fs::path(run) / "config.yaml").string();
  OLMO_CHECK(fs::exists(cfg_path), "audit: ", run, " has no config.yaml (not a run dir?)");
  olmo::train::Config c = olmo::train::load_config(cfg_path);
  const std::string ledger_path = (fs::path(run) / "audit" / "ledger.bin").string();
  OLMO_CHECK(fs::exists(ledger_path), "audit: ", run, " has no batch ledger (", ledger_path,
             "): the run was trained without the audit (audit.enabled: false) or before it "
             "existed");

  std::vector<olmo::audit::Finding> findings;
  std::vector<std::string> notes;
  // The dataset as the run saw it.
  const uint32_t V = uint32_t(olmo::train::model_config(c).vocab_size);
  olmo::data::FslOptions opt;
  opt.eos_id = uint32_t(c.data.eos_id);
  opt.pad_id = uint32_t(c.data.pad_id);
  opt.validate = false;
  std::vector<std::string> paths = olmo::data::expand_token_paths(c.data.mix);
  olmo::data::FslDataset ds(paths, c.data.seq_len, V, opt);

  // Every step against the order.
  olmo::audit::Ledger L = olmo::audit::read_ledger(ledger_path);
  OLMO_CHECK(!L.records.empty(), "audit: ", ledger_path, " holds no records");
  if (L.torn_tail) notes.push_back("the ledger ends inside a record (a crash mid-write): ignored");
  olmo::audit::BatchAuditor aud(ds, olmo::train::batch_instances(c), uint64_t(c.data.seed));
  olmo::audit::TokenHistogram served(V);
  std::set<int64_t> ledger_steps;
  for (auto& r : L.records) {
    for (auto& f : aud.observe(r, nullptr, 0)) findings.push_back(f);
    ledger_steps.insert(r.step);
  }
  for (auto& f : aud.finish()) findings.push_back(f);
  if (!a.has("--no-distribution"))
    for (auto& r : L.records)
      for (uint32_t idx : r.indices)
        if (int64_t(idx) < ds.size()) served.add(ds.view(idx), ds.seq_len());

  // Ledger coverage of the trained steps (metrics.jsonl).
  const std::string mpath = (fs::path(run) / "metrics.jsonl").string();
  if (fs::exists(mpath)) {
    std::ifstream f(mpath);
    std::vector<int64_t> missing;
    for (std::string line; std::getline(f, line);) {
      try {
        auto j = nlohmann::json::parse(line);
        if (j.value("kind", "") == "train" && !ledger_steps.count(j["step"].get<int64_t>()))
          missing.push_back(j["step"].get<int64_t>());
      } catch (...) {
      }
    }
    if (!missing.empty())
      findings.push_back({"ledger_missing", missing.front(),
                          cat(missing.size(), " trained steps have no ledger record (first ",
                              missing.front(), ", last ", missing.back(), ")")});
  } else {
    notes.push_back("no metrics.jsonl: ledger coverage of the trained steps not checked");
  }

  // Corpus index: distribution and contamination.
  olmo::audit::CorpusIndex idx = olmo::audit::load_corpus_index(ds.paths(), V);
  olmo::audit::TokenHistogram corpus = idx.counts;
  for (auto& m : idx.missing) olmo::audit::count_file_tokens(m, corpus);
  if (!idx.missing.empty())
    notes.push_back(cat(idx.missing.size(), " training token file(s) have no prepare index; "
                        "their unigram counts were computed now"));
  if (!a.has("--no-distribution")) {
    auto chk = olmo::audit::compare_distribution(served, corpus, c.audit.entropy_tol_bits,
                                                 c.audit.top_share_tol);
    if (!chk.ok()) findings.push_back({"distribution", L.records.back().step,
                                       "whole run: " + chk.describe()});
    notes.push_back("served tokens: " + chk.describe());
  }
  std::map<std::string, std::string> sets = c.eval.sets;
  for (auto& [k, v] : c.validation.sets) sets[k] = v;
  std::vector<std::string> extra;
  for (std::string rest = a.get("--held-out"); !rest.empty();) {
    auto comma = rest.find(',');
    extra.push_back(rest.substr(0, comma));
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
  }
  for (auto& kv : extra) {
    auto eq = kv.find('=');
    OLMO_CHECK(eq != std::string::npos, "audit: --held-out wants LABEL=PATH, got '", kv, "'");
    sets[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (auto& [label, p] : sets)
    OLMO_CHECK(fs::exists(p), "audit: held-out set '", label, "' not found: ", p);
  if (idx.ngram_sample == 0) {
    notes.push_back("no 13-gram index in the training mix (token files not made by "
                    "`olmo prepare`): contamination not checked");
  } else {
    for (auto& [label, p] : sets)
      for (auto& f : olmo::audit::check_contamination(idx, label, olmo::data::expand_token_paths(p),
                                                      uint32_t(c.data.eos_id),
                                                      c.audit.ngram_threshold, size_t(1) << 20))
        findings.push_back(f);
    for (auto& f : olmo::audit::check_cross_entry_duplicates(idx, size_t(1) << 20)) findings.push_back(f);
  }

  if (a.has("--json")) {
    nlohmann::json j = {{"run", run}, {"steps", L.records.size()}, {"clean", findings.empty()},
                        {"notes", notes}, {"findings", nlohmann::json::array()}};
    for (auto& f : findings)
      j["findings"].push_back({{"kind", f.kind}, {"step", f.step}, {"detail", f.detail}});
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("audit %s: %zu ledger records (steps %lld..%lld), %lld instances, %zu held-out "
                "set(s)\n",
                run.c_str(), L.records.size(), (long long)L.records.front().step,
                (long long)L.records.back().step, (long long)ds.size(), sets.size());
    for (auto& n : notes) std::printf("  note: %s\n", n.c_str());
    std::map<std::string, int64_t> per;
    for (auto& f : findings) {
      if (++per[f.kind] <= 50)
        std::printf("FINDING %s step %lld: %s\n", f.kind.c_str(), (long long)f.step,
                    f.detail.c_str());
    }
    for (auto& [k, n] : per)
      if (n > 50) std::printf("  (%lld %s findings in all)\n", (long long)n, k.c_str());
    std::printf("%s\n", findings.empty() ? "clean" : cat(findings.size(), " findings").c_str());
  }
  return findings.empty() ? 0 : 2;
}

OLMO_COMMAND("audit", "offline data-loader audit of a run dir (exit 0 clean, 2 findings)",
             run_audit);

}  // namespace
