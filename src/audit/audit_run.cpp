// Offline audit of a run dir (see audit_run.h).
#include "audit/audit_run.h"

#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "audit/corpus_index.h"
#include "audit/ledger.h"
#include "audit/token_stats.h"
#include "core/error.h"

namespace fs = std::filesystem;

namespace olmo::audit {

namespace {

// Trained steps of metrics.jsonl without a ledger record.
std::vector<int64_t> steps_without_record(const std::string& metrics,
                                          const std::set<int64_t>& ledger_steps) {
  std::ifstream f(metrics);
  std::vector<int64_t> missing;
  for (std::string line; std::getline(f, line);) {
    try {
      auto j = nlohmann::json::parse(line);
      if (j.value("kind", "") == "train" && !ledger_steps.count(j["step"].get<int64_t>()))
        missing.push_back(j["step"].get<int64_t>());
    } catch (const std::exception&) {
      // a torn last line (a run killed mid-write) is not a train record
    }
  }
  return missing;
}

}  // namespace

AuditReport audit_run(const AuditInputs& in) {
  OLMO_CHECK(in.dataset, "audit_run: no dataset");
  const data::InstanceSource& ds = *in.dataset;
  const std::string ledger_path = audit::ledger_path(in.run_dir);
  OLMO_CHECK(fs::exists(ledger_path), "audit: ", in.run_dir, " has no batch ledger (",
             ledger_path, "): the run was trained without the audit (audit.enabled: false) or "
             "before it existed");
  AuditReport rep;
  auto& F = rep.findings;

  // Every step against the order, every row re-read.
  Ledger L = read_ledger(ledger_path);
  OLMO_CHECK(!L.records.empty(), "audit: ", ledger_path, " holds no records");
  if (L.torn_tail)
    rep.notes.push_back("the ledger ends inside a record (a crash mid-write): ignored");
  rep.records = int64_t(L.records.size());
  // Recipe changes allowed at a resume (train/recipe_check.h): reported with their step.
  for (auto& rc : L.recipe_changes) {
    std::string changed = rc.json;
    try {
      changed = nlohmann::json::parse(rc.json).at("changed").get<std::string>();
    } catch (const std::exception&) {
      // shown as stored
    }
    rep.notes.push_back(cat("recipe change allowed at the resume from step ", rc.step,
                            " (steps ", rc.step + 1, " on): ", changed));
  }
  rep.first_step = L.records.front().step;
  rep.last_step = L.records.back().step;
  ProgressOptions bar_opt;
  bar_opt.mode = in.progress;
  bar_opt.units = "steps";
  BatchAuditor aud(ds, in.global_batch, in.seed);
  std::set<int64_t> ledger_steps;
  {
    ProgressBar bar(rep.records, "audit: order and rows", bar_opt);
    int64_t n = 0;
    for (auto& r : L.records) {
      for (auto& f : aud.observe(r, nullptr, 0)) F.push_back(f);
      ledger_steps.insert(r.step);
      bar.update(++n);
    }
  }
  for (auto& f : aud.finish()) F.push_back(f);

  // Ledger coverage of the trained steps.
  const std::string mpath = (fs::path(in.run_dir) / "metrics.jsonl").string();
  if (fs::exists(mpath)) {
    auto missing = steps_without_record(mpath, ledger_steps);
    if (!missing.empty())
      F.push_back({"ledger_missing", missing.front(),
                   cat(missing.size(), " trained steps have no ledger record (first ",
                       missing.front(), ", last ", missing.back(), ")")});
  } else {
    rep.notes.push_back("no metrics.jsonl: ledger coverage of the trained steps not checked");
  }

  // Corpus index: distribution and contamination.
  const uint32_t V = ds.vocab_size();
  CorpusIndex idx = load_corpus_index(ds.paths(), V);
  TokenHistogram corpus = idx.counts;
  for (auto& m : idx.missing) count_file_tokens(m, corpus);
  if (!idx.missing.empty())
    rep.notes.push_back(cat(idx.missing.size(), " training token file(s) have no prepare index; "
                            "their unigram counts were computed now"));
  if (in.distribution) {
    TokenHistogram served(V);
    std::vector<int32_t> row(size_t(ds.seq_len()));
    ProgressBar bar(rep.records, "audit: served distribution", bar_opt);
    int64_t n = 0;
    for (auto& r : L.records) {
      for (uint32_t i : r.indices)
        if (int64_t(i) < ds.size()) {
          ds.read(i, row.data());
          served.add(row.data(), ds.label_length(i));  // real tokens: no packing padding
        }
      bar.update(++n);
    }
    bar.finish();
    auto chk = compare_distribution(served, corpus, in.entropy_tol_bits, in.top_share_tol);
    if (!chk.ok()) F.push_back({"distribution", rep.last_step, "whole run: " + chk.describe()});
    rep.notes.push_back("served tokens: " + chk.describe());
  }
  if (idx.ngram_sample == 0) {
    rep.notes.push_back("no 13-gram index in the training mix (token files not made by "
                        "`olmo prepare`): contamination not checked");
  } else {
    for (auto& [label, files] : in.held_out)
      for (auto& f : check_contamination(idx, label, files, in.eos_id, in.ngram_threshold,
                                         size_t(1) << 20))
        F.push_back(f);
    for (auto& f : check_cross_entry_duplicates(idx, size_t(1) << 20)) F.push_back(f);
  }
  return rep;
}

}  // namespace olmo::audit
