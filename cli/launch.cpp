// `olmo launch [slots] [options] CONFIG [key=value ...]`: the elastic launcher
// (src/launch/launcher.h): runs `mpirun ... olmo train` and relaunches it after lost ranks or
// hosts, and when slots come back, from the newest complete checkpoint; inside a Slurm allocation
// it takes the allocation's slots and starts the ranks with srun (src/launch/slurm.h).
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <string>
#include <vector>

#include "cli_app.h"
#include "command.h"
#include "core/error.h"
#include "launch/launcher.h"
#include "launch/process.h"
#include "launch/slurm.h"
#include "train/preempt_stop.h"

namespace {

std::string self_exe() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, size_t(n)) : std::string("olmo");
}

int run_launch(int argc, char** argv) {
  using namespace olmo;
  launch::LaunchOptions o;
  auto app = cli::make_app(
      "launch",
      "Runs `mpirun ... olmo train CONFIG` and keeps it running: a job that loses a rank or a "
      "host is relaunched from the newest complete checkpoint on the slots that still answer; "
      "when slots come back the job stops at its next checkpoint and grows. The world size is "
      "the largest the slots allow that divides the micro-batches of a step. Events (launch, "
      "failure, resize with step and world sizes, done) go to RUN_DIR/launch.jsonl and stdout. "
      "With dist.reduce=exact (the default) every world size gives the same bits.");
  std::string mpi_args, srun_args;
  bool slurm = false, no_requeue = false;
  app->add_option("CONFIG", o.config, "the training YAML")->required();
  app->add_option("overrides", o.overrides, "key=value, passed to every job");
  app->add_option("--np", o.np, "N local slots")->check(olmo::cli::non_negative());
  app->add_option("--hosts", o.hosts, "H:S,...: hosts and slots (probed through the remote "
                                      "shell)");
  app->add_option("--hostfile", o.hostfile, "lines 'HOST slots=N', re-read while the run goes "
                                            "on");
  app->add_option("--min-np", o.min_np, "fewest processes to run on")->check(olmo::cli::positive());
  app->add_option("--max-failures", o.max_failures, "stop with an error after F failed jobs");
  app->add_option("--rsh-agent", o.rsh_agent, "remote shell for probes and mpirun's "
                                              "plm_rsh_agent (default ssh)");
  app->add_option("--mpirun", o.mpirun, "the mpirun to start");
  app->add_option("--mpi-args", mpi_args, "'ARGS': extra mpirun arguments, space-separated");
  app->add_option("--stall-timeout", o.stall.fixed_s,
                  "stall watchdog: a job without a new step for S seconds is stopped and "
                  "relaunched from the newest checkpoint (0: off). Default: on, derived from the "
                  "step times in metrics.jsonl: max(--stall-floor, 10 x the median step, 2 x the "
                  "longest checkpoint/eval gap), and --stall-startup before a job's first step")
      ->default_str("derived")
      ->check(olmo::cli::non_negative());
  app->add_option("--stall-floor", o.stall.floor_s, "the derived timeout's floor (seconds)");
  app->add_option("--stall-startup", o.stall.startup_s,
                  "allowance for model build / checkpoint load before a job's first step, and "
                  "for periodic work not yet measured (seconds)");
  app->add_flag("--slurm", slurm, "the slots of the Slurm allocation (default inside one when no "
                                  "--np / --hosts / --hostfile is given)");
  app->add_option("--srun", o.srun, "the srun to start");
  app->add_option("--srun-args", srun_args, "'ARGS': extra srun arguments");
  app->add_option("--scontrol", o.scontrol, "the scontrol to call");
  app->add_flag("--no-requeue", no_requeue, "after a preemption do not requeue the Slurm job");
  app->add_flag("--dry-run", o.dry_run, "print the slots, world size and the command it would "
                                        "start; run nothing");
  app->add_option("--poll", o.poll_s, "job and run-dir polling (seconds)");
  app->add_option("--probe-interval", o.probe_interval_s, "re-probing lost hosts / re-reading "
                                                          "the hostfile (seconds)");
  app->add_option("--probe-timeout", o.probe_timeout_s, "a host probe's timeout (seconds)");
  app->add_option("--lock-wait", o.lock_wait_s, "a relaunch waits this long for the old job's "
                                                "run-dir lock (seconds)");
  app->footer(cat(
      "Inside a Slurm allocation (sbatch, salloc; SLURM_JOB_ID set) without a slot option the "
      "slots are the allocation's (SLURM_JOB_NODELIST via scontrol show hostnames, "
      "SLURM_TASKS_PER_NODE), each job is `srun --mpi=pmix ...` and every rank runs "
      "SLURM_CPUS_PER_TASK threads (docs/slurm/ has sbatch scripts).\n"
      "Preemption: SIGTERM, SIGINT or SIGUSR1 (sbatch --signal=B:USR1@120) is passed to the "
      "ranks, which checkpoint at the next step boundary; nothing is restarted, a Slurm job is "
      "requeued (scontrol requeue) and olmo launch exits ", train::kExitPreempted,
      ". A second signal stops the job at once.\n"
      "Network: olmo opens no listening socket; mpirun and the ranks' libmpi do (Open MPI's "
      "out-of-band, PMIx and TCP BTL): docs/launch_security.md says which and how to fence "
      "them.\n"
      "exit: 0 the run finished, 1 error (gave up), 2 usage, ", train::kExitPreempted,
      " preempted: a checkpoint was written (and the Slurm job requeued); the same command "
      "resumes from it"));
  cli::parse(*app, argc, argv);
  o.mpi_args = launch::split_words(mpi_args);
  o.srun_args = launch::split_words(srun_args);
  o.slurm = slurm ||
            (o.np == 0 && o.hosts.empty() && o.hostfile.empty() && launch::in_slurm_allocation());
  o.requeue = !no_requeue;
  o.olmo_exe = self_exe();
  return launch::run_launcher(o);
}

OLMO_COMMAND("launch", "elastic mpirun launcher: survives lost ranks and hosts, grows back",
             run_launch);

}  // namespace
