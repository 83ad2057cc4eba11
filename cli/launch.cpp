// `olmo launch [slots] [options] CONFIG [key=value ...]`: the elastic launcher
// (src/launch/launcher.h): runs `mpirun ... olmo train` and relaunches it after lost ranks or
// hosts, and when slots come back, from the newest complete checkpoint; inside a Slurm allocation
// it takes the allocation's slots and starts the ranks with srun (src/launch/slurm.h).
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <string>
#include <vector>

#include "args.h"
#include "command.h"
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
  cli::Args a(argc, argv, {"--slurm", "--no-requeue", "--dry-run"});
  if (a.has("--help") || a.positional().empty()) {
    std::printf(
        "usage: olmo launch (--np N | --hosts H:S,... | --hostfile FILE | --slurm) [options] "
        "CONFIG.yaml [key=value ...]\n"
        "Runs `mpirun ... olmo train CONFIG` and keeps it running: a job that loses a rank or a\n"
        "host is relaunched from the newest complete checkpoint on the slots that still answer;\n"
        "when slots come back the job stops at its next checkpoint and grows. The world size is\n"
        "the largest the slots allow that divides the micro-batches of a step. Events (launch,\n"
        "failure, resize with step and world sizes, done) go to RUN_DIR/launch.jsonl and stdout.\n"
        "With dist.reduce=exact (the default) every world size gives the same bits.\n"
        "Inside a Slurm allocation (sbatch, salloc; SLURM_JOB_ID set) without a slot option the\n"
        "slots are the allocation's (SLURM_JOB_NODELIST via scontrol show hostnames,\n"
        "SLURM_TASKS_PER_NODE), each job is `srun --mpi=pmix ...` and every rank runs\n"
        "SLURM_CPUS_PER_TASK threads (docs/slurm/ has sbatch scripts).\n"
        "Preemption: SIGTERM, SIGINT or SIGUSR1 (sbatch --signal=B:USR1@120) is passed to the ranks,\n"
        "which checkpoint at the next step boundary; nothing is restarted, a Slurm job is requeued\n"
        "(scontrol requeue) and olmo launch exits %d. A second signal stops the job at once.\n"
        "  --np N                 N local slots\n"
        "  --hosts H:S,...        hosts and slots (probed through the remote shell)\n"
        "  --hostfile FILE        lines 'HOST slots=N', re-read while the run goes on\n"
        "  --min-np K             fewest processes to run on (default 1)\n"
        "  --max-failures F       stop with an error after F failed jobs (default 3)\n"
        "  --rsh-agent CMD        remote shell for probes and mpirun's plm_rsh_agent (default ssh)\n"
        "  --mpirun PATH          (default mpirun)\n"
        "  --mpi-args 'ARGS'      extra mpirun arguments, space-separated\n"
        "  --stall-timeout S      stall watchdog: a job without a new step for S seconds is stopped\n"
        "                         and relaunched from the newest checkpoint (0: off). Default: on,\n"
        "                         derived from the step times in metrics.jsonl: max(--stall-floor,\n"
        "                         10 x the median step, 2 x the longest checkpoint/eval gap), and\n"
        "                         --stall-startup before a job's first step\n"
        "  --stall-floor S        the derived timeout's floor (default 60)\n"
        "  --stall-startup S      allowance for model build / checkpoint load before a job's first\n"
        "                         step, and for periodic work not yet measured (default 600)\n"
        "  --slurm                the slots of the Slurm allocation (default inside one when no\n"
        "                         --np / --hosts / --hostfile is given)\n"
        "  --srun PATH, --srun-args 'ARGS', --scontrol PATH   (srun, none, scontrol)\n"
        "  --no-requeue           after a preemption do not requeue the Slurm job\n"
        "  --dry-run              print the slots, world size and the command it would start\n"
        "  --poll S, --probe-interval S, --probe-timeout S, --lock-wait S   (0.2, 5, 10, 30)\n"
        "Network: olmo opens no listening socket; mpirun and the ranks' libmpi do (Open MPI's\n"
        "out-of-band, PMIx and TCP BTL): docs/launch_security.md says which and how to fence them.\n"
        "exit codes: 0 the run finished, 1 error (gave up), %d preempted: a checkpoint was written\n"
        "  (and the Slurm job requeued); the same command resumes from it\n",
        train::kExitPreempted, train::kExitPreempted);
    return a.has("--help") ? 0 : 1;
  }
  a.finish({"--np", "--hosts", "--hostfile", "--min-np", "--max-failures", "--rsh-agent",
            "--mpirun", "--mpi-args", "--poll", "--probe-interval", "--probe-timeout",
            "--lock-wait", "--stall-timeout", "--stall-floor", "--stall-startup", "--slurm", "--srun", "--srun-args", "--scontrol",
            "--no-requeue", "--dry-run"});
  launch::LaunchOptions o;
  o.config = a.positional()[0];
  o.overrides.assign(a.positional().begin() + 1, a.positional().end());
  o.np = int(a.get_int("--np", 0));
  o.hosts = a.get("--hosts");
  o.hostfile = a.get("--hostfile");
  o.min_np = int(a.get_int("--min-np", 1));
  o.max_failures = int(a.get_int("--max-failures", 3));
  o.rsh_agent = a.get("--rsh-agent");
  o.mpirun = a.get("--mpirun", "mpirun");
  o.mpi_args = launch::split_words(a.get("--mpi-args"));
  o.poll_s = a.get_double("--poll", o.poll_s);
  o.probe_interval_s = a.get_double("--probe-interval", o.probe_interval_s);
  o.probe_timeout_s = a.get_double("--probe-timeout", o.probe_timeout_s);
  o.lock_wait_s = a.get_double("--lock-wait", o.lock_wait_s);
  o.stall.fixed_s = a.get_double("--stall-timeout", o.stall.fixed_s);
  OLMO_CHECK(o.stall.fixed_s >= 0 || !a.has("--stall-timeout"),
             "--stall-timeout must be >= 0 seconds (0: off), got ", a.get("--stall-timeout"));
  o.stall.floor_s = a.get_double("--stall-floor", o.stall.floor_s);
  o.stall.startup_s = a.get_double("--stall-startup", o.stall.startup_s);
  o.slurm = a.has("--slurm") ||
            (o.np == 0 && o.hosts.empty() && o.hostfile.empty() && launch::in_slurm_allocation());
  o.srun = a.get("--srun", "srun");
  o.srun_args = launch::split_words(a.get("--srun-args"));
  o.scontrol = a.get("--scontrol", "scontrol");
  o.requeue = !a.has("--no-requeue");
  o.dry_run = a.has("--dry-run");
  o.olmo_exe = self_exe();
  return launch::run_launcher(o);
}

OLMO_COMMAND("launch", "elastic mpirun launcher: survives lost ranks and hosts, grows back",
             run_launch);

}  // namespace
