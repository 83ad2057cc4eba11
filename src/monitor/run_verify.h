// `olmo verify RUN --from stepA [--to stepB]`: re-executes the span A..B of the run in RUN on
// this machine and checks it bit for bit against what RUN recorded, so that anyone holding a
// published run can check that its checkpoints follow from each other.
//
// The re-execution: RUN/stepA (its checksums checked first) is copied into a scratch dir and
// resumed there with RUN/config.yaml (the resolved config of the run), overridden only in
// trainer.run_dir (the scratch dir), trainer.hard_stop_steps (B; the schedule is unchanged) and
// model.precision (the precision stepA's recipe records: `auto` resolves per machine);
// evaluations, benchmarks, validation and the audits are not run (they read the state, never
// change it). Nothing is ever written into RUN. Checked as the span runs:
//   - after every step s of (A, B]: the state fingerprint (Trainer::state_digest) against the
//     "state_fingerprint" RUN/metrics.jsonl recorded for s (where recorded);
//   - every checkpoint the re-execution writes at a step N for which RUN holds a stepN: every
//     tensor bit for bit and every state group (ckpt/state_diff.h); RUN/stepN's own checksums
//     are checked first (a damaged stored piece is a finding too).
// The first difference stops the re-execution and is the finding: its step and, for a
// checkpoint, its tensor (per-step fingerprints are one value for the whole state: the step
// only). The same at any world size (docs/distributed.md); runs in one process.
// Errors (olmo::Error, exit 1): RUN not a run dir, no config.yaml, no committed stepA, B <= A,
// nothing recorded to check in (A, B], a scratch dir inside RUN or not empty, a damaged stepA.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace olmo::train {

struct RunVerifyOptions {
  std::string run_dir;
  int64_t from = -1;          // A: the step of RUN's checkpoint to start from
  int64_t to = -1;            // B; -1: the last step RUN recorded (checkpoint or metrics record)
  std::string scratch;        // "": a new dir under the system's temporary dir
  bool keep_scratch = false;  // else it is removed at the end (kept when a difference is found)
};

struct RunVerifyReport {
  int64_t from = 0, to = 0;
  std::string scratch;                   // where the re-execution wrote
  bool scratch_kept = false;
  int64_t steps_run = 0;                 // steps re-executed
  int64_t fingerprints_checked = 0;      // per-step fingerprints compared (equal unless found)
  std::vector<int64_t> checkpoints_checked;
  std::vector<int64_t> steps_unrecorded;  // steps of the span without a recorded fingerprint
  // The first difference: empty when the span reproduced.
  std::string finding;
  int64_t finding_step = -1;
  std::string finding_tensor;             // "" for a per-step fingerprint or a state section
  bool ok() const { return finding.empty(); }
};

// Steps of "stepN" or "N" (the --from / --to arguments); throws olmo::Error naming `what`.
int64_t parse_step(const std::string& s, const std::string& what);

// Runs the check; `note` receives one line per event for people (the start, each checkpoint
// compared); the trainer's own progress lines go to stdout as in `olmo train`.
RunVerifyReport verify_run(const RunVerifyOptions& o,
                           const std::function<void(const std::string&)>& note);

}  // namespace olmo::train
