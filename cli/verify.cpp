// `olmo verify RUN --from stepA [--to stepB] [--scratch DIR] [--keep-scratch]`: re-executes steps
// A+1..B of the run in RUN on this machine from its checkpoint stepA and checks every later
// checkpoint and every step's state fingerprint bit for bit (monitor/run_verify.h).
// Exit status: 0 the span reproduced, 3 a difference (printed as "FINDING step N: ..."; with the
// tensor for a checkpoint), 1 an error (no run dir, no stepA, nothing to check), 2 usage.
#include <cstdio>
#include <string>

#include "cli_app.h"
#include "command.h"
#include "core/error.h"
#include "monitor/run_verify.h"

namespace {

int run_verify(int argc, char** argv) {
  using namespace olmo;
  auto app = cli::make_app(
      "verify",
      "Re-executes the steps after checkpoint stepA of the run in RUN on this machine (its "
      "config.yaml; the scratch dir gets the new run, RUN is only read) and checks every later "
      "checkpoint of RUN and the state fingerprint metrics.jsonl recorded for every step, bit "
      "for bit.");
  std::string run, from, to, scratch;
  bool keep = false;
  app->add_option("RUN", run, "the run dir (config.yaml, metrics.jsonl, stepN checkpoints)")
      ->required();
  app->add_option("--from", from, "the checkpoint to start from: stepA (or A)")->required();
  app->add_option("--to", to, "the last step to re-execute: stepB (or B); default: the last "
                              "step RUN recorded");
  app->add_option("--scratch", scratch, "where the re-execution writes (new or empty, outside "
                                        "RUN); default: a new dir under the temporary dir");
  app->add_flag("--keep-scratch", keep, "keep the scratch dir (it is kept anyway on a difference)");
  app->footer("exit: 0 the span reproduced bit for bit, 3 a difference (FINDING step N: ... names "
              "the step and, for a checkpoint, the tensor), 1 error, 2 usage");
  cli::parse(*app, argc, argv);
  train::RunVerifyOptions o;
  o.run_dir = run;
  try {
    o.from = train::parse_step(from, "--from");
    o.to = to.empty() ? -1 : train::parse_step(to, "--to");
  } catch (const Error& e) {
    cli::usage_error(*app, e.what());
  }
  o.scratch = scratch;
  o.keep_scratch = keep;
  const train::RunVerifyReport rep = train::verify_run(o, [](const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  });
  std::string ckpts;
  for (int64_t s : rep.checkpoints_checked) ckpts += cat(ckpts.empty() ? "" : ", ", "step", s);
  std::printf("verify: %lld steps re-executed, %lld state fingerprints and %zu checkpoints (%s) "
              "compared%s\n",
              (long long)rep.steps_run, (long long)rep.fingerprints_checked,
              rep.checkpoints_checked.size(), ckpts.empty() ? "none" : ckpts.c_str(),
              rep.steps_unrecorded.empty()
                  ? ""
                  : cat("; ", rep.steps_unrecorded.size(), " steps have no recorded fingerprint")
                        .c_str());
  if (!rep.ok()) {
    std::printf("FINDING %s\n", rep.finding.c_str());
    std::printf("verify: steps %lld..%lld of %s do NOT reproduce on this machine; the "
                "re-execution is kept in %s\n",
                (long long)rep.from + 1, (long long)rep.to, run.c_str(), rep.scratch.c_str());
    return cli::kExitFindings;
  }
  std::printf("verify: steps %lld..%lld of %s reproduced bit for bit%s\n", (long long)rep.from + 1,
              (long long)rep.to, run.c_str(),
              rep.scratch_kept ? cat(" (re-execution kept in ", rep.scratch, ")").c_str() : "");
  return cli::kExitOk;
}

}  // namespace

OLMO_COMMAND("verify", "re-execute a span of a run from a checkpoint and check its later "
             "checkpoints and per-step state fingerprints bit for bit", run_verify);
