// `olmo launch`: an elastic launcher for data-parallel training. It runs
// `mpirun ... olmo train CONFIG [overrides]` over a set of slots and keeps the run going:
//   * a job that dies (a rank or a whole host lost) is relaunched at once from the newest
//     complete checkpoint, on the slots that still answer (hosts are probed through the remote
//     shell mpirun uses), as long as they allow at least min_np processes;
//   * when slots come back (a lost host answers again, or the hostfile grows or shrinks) the job
//     is asked to stop at its next checkpoint (src/train/resize_stop.h) and is relaunched on the
//     new world size from that checkpoint;
//   * the world size is always the largest one the slots allow, at most the instances of a step
//     (dist.reduce=exact: any such count, 63 of 64 included); under dist.reduce=fast it must
//     also divide the micro-batches of a step (a shrink to a size that does not divide them
//     takes the next smaller one, and says so);
//   * every launch, failure and resize is one JSON line in RUN_DIR/launch.jsonl (and on stdout):
//     {"event":"resize","step":N,"from":W0,"to":W1,"reason":...}, with restart latencies and
//     lost steps;
//   * a job that makes no progress (no new train record) for the stall timeout (a hung host, a
//     frozen rank) is stopped and counts as failed, so it is relaunched from the newest
//     checkpoint; the watchdog is on by default with a timeout derived from the step times
//     measured in metrics.jsonl (stall_timeout.h: max(60 s, 10 x the median step, ...), a
//     start-up allowance before a job's first step), fixed by --stall-timeout S, off with 0;
//   * it stops with an error after max_failures failed jobs, when the slots fall below min_np,
//     or when the run dir is locked by a live job;
//   * inside a Slurm allocation (src/launch/slurm.h) the slots are the allocation's and each
//     job is a `srun --mpi=pmix` step with the allocation's CPUs per task as threads per rank;
//   * preemption: SIGTERM, SIGINT or SIGUSR1 to the launcher is forwarded to the job as
//     SIGUSR1 (mpirun and srun both pass it on to every rank; mpirun would kill the ranks on a
//     SIGTERM); the ranks checkpoint at the next step boundary and exit with
//     train::kExitPreempted (src/train/preempt_stop.h). A job ending with that code (also when
//     Slurm signalled the ranks directly) is not restarted: the launcher runs
//     `scontrol requeue $SLURM_JOB_ID` inside a Slurm job and exits with kExitPreempted. A
//     second signal stops the job at once (SIGTERM, then SIGKILL).
// With dist.reduce=exact every world size computes the same bits, so a run that was resized
// any number of times ends bitwise equal to one that never was (tests/distributed/launch_*).
#pragma once
#include <string>
#include <vector>

#include "launch/stall_timeout.h"

namespace olmo::launch {

struct LaunchOptions {
  std::string config;                  // the training YAML
  std::vector<std::string> overrides;  // key=value, passed to every job
  // Slots: exactly one of np (local), hosts ("a:2,b:2"), hostfile (re-read while running).
  int np = 0;
  std::string hosts, hostfile;
  int min_np = 1;
  int max_failures = 3;  // the run stops with an error when this many jobs have failed
  std::string mpirun = "mpirun";
  std::vector<std::string> mpi_args;  // extra mpirun arguments (e.g. --allow-run-as-root)
  std::string rsh_agent;              // remote shell for probes and mpirun (default: ssh)
  std::string olmo_exe;               // the olmo binary the ranks run
  double poll_s = 0.2;                // job and run-dir polling
  double probe_interval_s = 5;        // re-probing lost hosts / re-reading the hostfile
  double probe_timeout_s = 10;
  double lock_wait_s = 30;            // a relaunch waits this long for the old job's lock
  // The stall watchdog (stall_timeout.h): a job without a new train record for its timeout
  // is stopped and counted as failed (a host cut off without its processes dying never ends
  // the job by itself). stall.fixed_s: < 0 derived from the step times (default), 0 off.
  StallOptions stall;
  // Slurm (the slots of the allocation; see slurm.h). Set by `olmo launch --slurm`, or when no
  // slot option is given inside an allocation.
  bool slurm = false;
  std::string srun = "srun", scontrol = "scontrol";
  std::vector<std::string> srun_args;  // extra srun arguments
  bool requeue = true;                 // scontrol requeue after a preemption (Slurm only)
  bool dry_run = false;                // print the slots, world size and job command; run nothing
};

// Runs until the training run finishes (returns 0) or was preempted (returns
// train::kExitPreempted: a checkpoint was written, the Slurm job requeued). Throws olmo::Error
// with the reason when it gives up (failures, too few slots, a locked run dir, bad input).
int run_launcher(const LaunchOptions& opt);

}  // namespace olmo::launch
