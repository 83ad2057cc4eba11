// Preemption: SIGTERM, SIGINT or SIGUSR1 to `olmo train` (a scheduler's notice before a time
// limit or preemption, Ctrl-C, or `olmo launch` forwarding one) stops the run at the next step
// boundary with a complete checkpoint of that step, and `olmo train` exits with kExitPreempted.
// Contract: the signal handler only sets a flag; after every step (on_step, after the
// Checkpointer, so an interval checkpoint of that step is already committed) every rank joins a
// one-byte collective (Communicator::any) carrying its flag, so a signal that reached one rank
// only (kill of one process, Slurm signalling some tasks first) stops all ranks at the same
// step. If that step has no checkpoint yet one is written (collective, as at an interval);
// rank 0 logs {"kind":"info","event":"preempt_stop","step":N,"signal":S,"checkpoint":DIR} to
// metrics.jsonl (S: the signal rank 0 got, 0 when only another rank got one), and Preempted is thrown, which cli/train.cpp turns into exit kExitPreempted.
// A signal during the last step lets the run finish normally (exit 0: nothing to resume).
// The resumed run continues from stepN exactly as after any checkpoint: bitwise the same end.
// Cost: one one-byte allreduce per step (nothing is read from disk).
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

#include "train/trainer.h"

namespace olmo::train {

// Exit code of `olmo train` (and of `olmo launch`) after a preemption stop: "preempted, a
// checkpoint of the stop step was written; run the same command again to resume".
constexpr int kExitPreempted = 4;

struct Preempted : std::runtime_error {
  int64_t step;
  int signal;
  std::string checkpoint;
  Preempted(int64_t s, int sig, std::string dir);
};

class PreemptStopCallback : public Callback {
 public:
  std::string name() const override { return "preempt_stop"; }
  void on_step(Trainer& t, const StepResult& r) override;
};

// Installs the SIGTERM / SIGINT / SIGUSR1 handlers and adds the callback (last, after the
// Checkpointer).
void add_preempt_stop(Trainer& t);

// The signal received since add_preempt_stop (0: none); for tests and messages.
int preempt_signal();

}  // namespace olmo::train
