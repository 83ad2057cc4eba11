// The in-loop data-loader audit (on by default: audit.enabled) and the alarm line shared with
// the validation checkpoints.
//   DataAudit (rank 0)  every step: one ledger record (RUN_DIR/audit/ledger.bin, audit/ledger.h)
//                       from Trainer::last_batch() (the batch as the model consumed it), then the
//                       checks of audit/checks.h against an independent recomputation of the
//                       numpy global order, with a re-read of audit.reread_rows rows from the
//                       token files; every audit.stats_window steps the served unigram
//                       distribution against the corpus's (prepare's token_counts.bin; token
//                       files without one are counted once at start); at start the held-out
//                       sets (eval.sets, validation.sets) against the training mix's 13-gram
//                       and document index (contamination, duplicates across mix entries):
//                       every finding in RUN_DIR/audit/start_findings.jsonl, one alarm per cause
//                       (not repeated after a resume).
//                       Resume: the ledger is cut after the resumed step and replayed, so the
//                       checks continue as if the run had never stopped.
//                       At the end: {"kind":"info","event":"audit",...} with the in-loop cost.
//   raise_alarm         {"kind":"alarm","step","source","cause","detail"} in metrics.jsonl, an
//                       "ALARM" console line, and a stop request when asked.
// A failure inside the audit (an unreadable index, ...) is logged as
// {"kind":"info","event":"audit_error"} and turns the audit off; it never stops training.
// Cost per step: one XXH3 pass over the batch's tokens, B 32-bit hashes, B bit tests, the
// re-read of reread_rows x T tokens, and one 56 + 8B byte ledger write.
#pragma once
#include <map>
#include <memory>
#include <string>

#include "audit/checks.h"
#include "audit/ledger.h"
#include "audit/token_stats.h"
#include "train/trainer.h"

namespace olmo::train {

void raise_alarm(Trainer& t, const std::string& source, const std::string& cause,
                 const std::string& detail, bool stop);

class DataAudit : public Callback {
 public:
  std::string name() const override { return "data_audit"; }
  void on_start(Trainer& t) override;
  void on_step(Trainer& t, const StepResult& r) override;
  void on_end(Trainer& t) override;
  double seconds() const { return seconds_; }
  int64_t steps() const { return steps_; }

 private:
  void report(Trainer& t, const std::vector<audit::Finding>& fs);
  void fail(Trainer& t, const std::exception& e);
  bool active_ = false;
  std::unique_ptr<audit::LedgerWriter> ledger_;
  std::unique_ptr<audit::BatchAuditor> auditor_;
  audit::TokenHistogram corpus_, window_;
  bool have_corpus_ = false;
  int64_t window_steps_ = 0;
  std::map<std::string, int64_t> alarms_;  // per cause
  double seconds_ = 0;
  int64_t steps_ = 0;
  double train_seconds_ = 0;
};

// Adds the data.inject_fault callback (data/fault_inject.h; a pre_step hook that rewrites the
// batch) when the config asks for one.
void install_fault_injection(Trainer& t);

}  // namespace olmo::train
