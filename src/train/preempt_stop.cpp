// Stop at the next step boundary with a checkpoint on SIGTERM / SIGINT / SIGUSR1 (see
// preempt_stop.h).
#include "train/preempt_stop.h"

#include <csignal>
#include <cstring>

#include "core/error.h"
#include "distributed/communicator.h"
#include "train/metrics_log.h"
#include "train/progress.h"

namespace olmo::train {

namespace {
volatile std::sig_atomic_t g_signal = 0;
extern "C" void on_preempt_signal(int s) { g_signal = s; }
}  // namespace

int preempt_signal() { return g_signal; }

Preempted::Preempted(int64_t s, int sig, std::string dir)
    : std::runtime_error(cat("stopped after step ", s, " on a signal; checkpoint ", dir)),
      step(s), signal(sig), checkpoint(std::move(dir)) {}

void PreemptStopCallback::on_step(Trainer& t, const StepResult& r) {
  if (r.step >= t.total_steps()) return;  // the last step: the run ends normally
  const int mine = g_signal;
  if (!t.comm().any(mine != 0)) return;
  // Every rank decides alike (no file system test): an interval step was checkpointed by the
  // Checkpointer just before (or deferred by a non-finite step, when another save_checkpoint()
  // would only defer again); any other step is checkpointed now, by all ranks together.
  // An asynchronous checkpoint in flight (this step's or an earlier one) is committed first: the
  // process exits only with its checkpoints complete.
  t.finish_checkpoint();
  const int64_t every = t.config().trainer.save_interval;
  const std::string dir = every > 0 && r.step % every == 0 ? cat(t.run_dir(), "/step", r.step)
                                                           : t.save_checkpoint();
  // mine = 0 on a rank that was not signalled itself (another rank was).
  const std::string what = mine ? cat("signal ", mine, " (", strsignal(mine), ")")
                                : std::string("a signal to another rank");
  if (t.rank() == 0) {
    t.metrics().write({{"kind", "info"}, {"event", "preempt_stop"}, {"step", r.step},
                       {"signal", mine}, {"checkpoint", dir}});
    t.progress().message(cat(what, ": stopping after step ", r.step, " with checkpoint ", dir));
  }
  t.comm().barrier();
  throw Preempted(r.step, mine, dir);
}

void add_preempt_stop(Trainer& t) {
  struct sigaction sa {};
  sa.sa_handler = on_preempt_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGTERM, SIGINT, SIGUSR1}) sigaction(s, &sa, nullptr);
  t.add_callback(std::make_unique<PreemptStopCallback>());
}

}  // namespace olmo::train
