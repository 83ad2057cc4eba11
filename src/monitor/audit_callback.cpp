// In-loop data-loader audit and alarms (see audit_callback.h).
#include "monitor/audit_callback.h"

#include <filesystem>

#include "audit/corpus_index.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/hash.h"
#include "core/timer.h"
#include "data/fault_inject.h"
#include "data/token_paths.h"
#include "data/instance_source.h"
#include "train/metrics_log.h"
#include "train/progress.h"

namespace fs = std::filesystem;

namespace olmo::train {

void raise_alarm(Trainer& t, const std::string& source, const std::string& cause,
                 const std::string& detail, bool stop) {
  t.metrics().write({{"kind", "alarm"}, {"step", t.step()}, {"source", source}, {"cause", cause},
                     {"detail", detail}});
  t.progress().message(cat("ALARM step ", t.step(), " [", source, "/", cause, "] ", detail));
  if (stop) {
    t.progress().message("ALARM: stopping the run (" + source + ".stop_on_alarm)");
    t.request_stop();
  }
}

void DataAudit::fail(Trainer& t, const std::exception& e) {
  active_ = false;
  ledger_.reset();
  t.metrics().write({{"kind", "info"}, {"event", "audit_error"}, {"step", t.step()},
                     {"error", e.what()}});
  t.progress().message(cat("warning: data audit turned off: ", e.what()));
}

void DataAudit::report(Trainer& t, const std::vector<audit::Finding>& fs) {
  for (auto& f : fs) {
    int64_t n = ++alarms_[f.kind];
    if (n <= t.config().audit.max_alarms)
      raise_alarm(t, "audit", f.kind, f.detail, t.config().audit.stop_on_alarm);
  }
}

void DataAudit::on_start(Trainer& t) {
  const Config& c = t.config();
  if (!c.audit.enabled || t.rank() != 0) return;
  try {
    double t0 = now_seconds();
    const data::InstanceSource& ds = t.instances();  // fsl or packed_fsl
    auditor_ = std::make_unique<audit::BatchAuditor>(ds, batch_instances(c), uint64_t(c.data.seed));
    std::string path = (fs::path(t.run_dir()) / "audit" / "ledger.bin").string();
    if (t.step() > 0 && fs::exists(path)) {  // resumed: replay what was served before
      audit::Ledger L = audit::read_ledger(path);
      for (auto& r : L.records)
        if (r.step <= t.step()) auditor_->observe(r, nullptr, -1);
    }
    ledger_ = std::make_unique<audit::LedgerWriter>(path, t.step());

    // The corpus's unigram distribution, and contamination of the held-out sets.
    // The n-gram index is loaded only at start and only up to 1 GiB (a full-scale corpus needs a
    // sparser sample than prepare's default; `olmo audit` loads it regardless).
    const uint64_t ng_bytes = audit::ngram_index_bytes(ds.paths());
    const bool with_ngrams = t.step() == 0 && c.audit.contamination && ng_bytes <= (1ull << 30);
    audit::CorpusIndex idx = audit::load_corpus_index(ds.paths(), ds.vocab_size(), with_ngrams);
    corpus_ = idx.counts;
    uint64_t missing_tokens = 0;
    for (auto& m : idx.missing) missing_tokens += file_size(m) / 4;
    std::string note;
    if (missing_tokens <= (uint64_t(1) << 28)) {
      for (auto& m : idx.missing) audit::count_file_tokens(m, corpus_);
      if (!idx.missing.empty())
        note = cat(idx.missing.size(), " token file(s) without a prepare index: counted now");
    } else {
      note = cat(idx.missing.size(), " token file(s) without a prepare index (", missing_tokens,
                 " tokens): served-distribution check off");
      corpus_ = audit::TokenHistogram();
    }
    have_corpus_ = corpus_.total() > 0;
    window_ = audit::TokenHistogram(ds.vocab_size());
    int64_t contaminated = 0;
    if (t.step() > 0) {
      // Resumed: the start checks ran (and were logged) when the run started.
    } else if (c.audit.contamination && idx.ngram_sample > 0) {
      std::map<std::string, std::string> sets = c.eval.sets;
      for (auto& [k, v] : c.validation.sets) sets[k] = v;
      std::vector<audit::Finding> found;
      for (auto& [label, p] : sets) {
        auto f = audit::check_contamination(idx, label, data::expand_token_paths(p),
                                            uint32_t(c.data.eos_id), c.audit.ngram_threshold,
                                            size_t(1) << 20);
        contaminated += int64_t(f.size());
        found.insert(found.end(), f.begin(), f.end());
      }
      auto d = audit::check_cross_entry_duplicates(idx, size_t(1) << 20);
      found.insert(found.end(), d.begin(), d.end());
      // Every finding in RUN_DIR/audit/start_findings.jsonl; one alarm per cause.
      std::string lines;
      std::map<std::string, std::vector<const audit::Finding*>> by;
      for (auto& f : found) {
        lines += nlohmann::json{{"kind", f.kind}, {"detail", f.detail}}.dump() + "\n";
        by[f.kind].push_back(&f);
      }
      std::string list = (fs::path(t.run_dir()) / "audit" / "start_findings.jsonl").string();
      write_file_atomic(list, lines);
      std::vector<audit::Finding> summary;
      for (auto& [kind, v] : by)
        summary.push_back({kind, t.step(),
                           v.size() == 1 ? v[0]->detail
                                         : cat(v.size(), " findings (all in ", list, "); first: ",
                                               v[0]->detail)});
      report(t, summary);
    } else if (c.audit.contamination) {
      note += std::string(note.empty() ? "" : "; ") +
              (ng_bytes > (1ull << 30)
                   ? cat("13-gram index of ", ng_bytes, " bytes > 1 GiB: contamination left to "
                         "`olmo audit`")
                   : std::string("no 13-gram index in the training mix: contamination not checked"));
    }
    active_ = true;
    t.metrics().write({{"kind", "info"}, {"event", "audit_start"}, {"step", t.step()},
                       {"ledger", path}, {"corpus_tokens", corpus_.total()},
                       {"corpus_entropy_bits", corpus_.entropy_bits()},
                       {"contamination_findings", contaminated}, {"note", note},
                       {"seconds", now_seconds() - t0}});
    t.progress().message(cat("audit: ledger ", path, ", corpus unigram entropy ",
                             corpus_.entropy_bits(), " bits", note.empty() ? "" : "; " + note));
  } catch (const std::exception& e) {
    fail(t, e);
  }
}

void DataAudit::on_step(Trainer& t, const StepResult& r) {
  if (!active_) return;
  double t0 = now_seconds();
  try {
    const auto& b = t.last_batch();
    audit::LedgerRecord rec;
    rec.step = r.step;
    rec.epoch = b.epoch;
    rec.batch = b.batch_index;
    rec.world = t.world();
    rec.rank = t.rank();
    rec.chunk = t.loader().rank_chunk();
    rec.content_hash = hash64(b.tokens.data(), b.tokens.size() * 4);
    rec.loader_hash = b.global_hash;
    rec.indices.resize(size_t(b.B));
    rec.row_hashes.resize(size_t(b.B));
    for (int64_t k = 0; k < b.B; ++k) {
      rec.indices[size_t(k)] = uint32_t(b.instance_indices[size_t(k)]);
      rec.row_hashes[size_t(k)] = audit::row_hash(b.tokens.data() + k * b.T, b.T);
    }
    ledger_->append(rec);
    report(t, auditor_->observe(rec, b.tokens.data(), t.config().audit.reread_rows));
    if (have_corpus_) {
      // Real tokens only: a packed instance's padding is not text of the corpus.
      for (int64_t k = 0; k < b.B; ++k)
        window_.add(b.tokens.data() + k * b.T,
                    t.instances().label_length(b.instance_indices[size_t(k)]));
      if (++window_steps_ >= t.config().audit.stats_window) {
        auto chk = audit::compare_distribution(window_, corpus_, t.config().audit.entropy_tol_bits,
                                               t.config().audit.top_share_tol);
        if (!chk.ok())
          report(t, {{"distribution", r.step,
                      cat("last ", window_steps_, " steps: ", chk.describe())}});
        window_.clear();
        window_steps_ = 0;
      }
    }
  } catch (const std::exception& e) {
    fail(t, e);
  }
  seconds_ += now_seconds() - t0;
  train_seconds_ += r.seconds;
  ++steps_;
}

void DataAudit::on_end(Trainer& t) {
  if (!active_) return;
  try {
    report(t, auditor_->finish());
  } catch (const std::exception& e) {
    fail(t, e);
    return;
  }
  nlohmann::json counts = nlohmann::json::object();
  for (auto& [k, n] : alarms_) counts[k] = n;
  double ms = steps_ ? 1e3 * seconds_ / double(steps_) : 0;
  double share = train_seconds_ > 0 ? seconds_ / train_seconds_ : 0;
  t.metrics().write({{"kind", "info"}, {"event", "audit"}, {"step", t.step()},
                     {"steps", steps_}, {"ms_per_step", ms}, {"share_of_step", share},
                     {"findings", counts}});
  t.progress().message(cat("audit: ", steps_, " steps audited, ", ms, " ms/step (",
                           100.0 * share, "% of the step), ",
                           alarms_.empty() ? std::string("no findings")
                                           : cat(counts.dump(), " findings")));
}

// data.inject_fault as a pre_step hook: the injector rewrites the batch before the model sees it.
namespace {
class DataFaultInjection : public Callback {
 public:
  explicit DataFaultInjection(std::unique_ptr<data::FaultInjector> fi) : fi_(std::move(fi)) {}
  std::string name() const override { return "data_fault_injection"; }
  void pre_step(Trainer& t, data::DataLoader::Batch& b) override { fi_->apply(t.step(), b); }

 private:
  std::unique_ptr<data::FaultInjector> fi_;
};
}  // namespace

void install_fault_injection(Trainer& t) {
  const auto& d = t.config().data;
  if (d.inject_fault == InjectFault::none) return;
  OLMO_CHECK(t.config().allow_fault_injection, "data.inject_fault = '", choice_name(d.inject_fault),
             "' needs allow_fault_injection: true");
  data::FaultOptions o;
  o.kind = choice_name(d.inject_fault);
  o.start_step = d.fault_start_step;
  o.pool_size = d.fault_pool_size;
  o.stride = d.fault_stride;
  o.every = d.fault_every;
  t.add_callback(std::make_unique<DataFaultInjection>(
      std::make_unique<data::FaultInjector>(t.instances(), o)));
  t.progress().message(cat("WARNING: fault injection '", o.kind, "' from step ", o.start_step,
                           " (test runs only)"));
}

}  // namespace olmo::train
