"""`olmo launch` under a real Slurm (issue 39, item 5): a one-node Slurm started by the test
(tests/launch/slurm_util.py: munged, slurmctld, slurmd from Debian's packages, all in a temp
dir), then `sbatch` of a script that runs `olmo launch` on the tiny config
1. with --ntasks=1 and 2. with --ntasks=2: the launcher reads the allocation (one node, 1 or 2
   slots, 1 CPU per task), starts the ranks with `srun --mpi=pmix`, and the run ends bitwise
   equal to a plain `olmo train` of the same config (every tensor, state section and per-step
   record of the last checkpoint; `olmo ckpt verify`); the run's start record says the world
   size and the MPI backend;
3. `olmo launch --dry-run` inside the 2-task allocation prints the srun command it would start
   (--mpi=pmix, 2 tasks, 1 CPU per task, trainer.threads=1) and starts nothing.
Skips (exit 77) naming the missing package where Slurm or munge is not installed.
Env: OLMO_BIN, OLMO_SOURCE_DIR. Exit 0 = pass.
"""
import os
import sys
import time

import slurm_util as su
from olmo_test import check
from olmo_test import tiny_data as td

STEPS = 4


def body(tmp, du, lu):
    cfg = td.tiny_config()
    t0 = time.time()
    data, ref = su.reference(du, lu, tmp, STEPS)
    print(f"plain run: {time.time() - t0:.1f} s", flush=True)
    with su.Cluster(tmp) as c:
        print(f"slurm up in {c.started:.1f} s", flush=True)
        for tasks in (1, 2):
            run = os.path.join(tmp, f"run{tasks}")
            ov = lu.overrides(data, run, STEPS)
            lines = []
            if tasks == 2:
                lines.append(su.launch_line(cfg, ov, ["--dry-run"]).replace("exec ", "") +
                             f" > {tmp}/dry.txt 2>&1")
            lines.append(su.launch_line(cfg, ov))
            script = su.job_script(os.path.join(tmp, f"job{tasks}.sh"), tasks, lines)
            t0 = time.time()
            job = c.sbatch(script, ["-D", tmp], env=su.job_env())
            if not c.completed(job, script, t0, f"{tasks} task(s)"):
                continue
            st = du.start_record(run)
            check(st["world"] == tasks and "mpi" in st["dist_backend"],
                     f"{tasks} tasks: start record world {st['world']} backend {st['dist_backend']}")
            launches = lu.events(run, "launch")
            check([e["world"] for e in launches] == [tasks], f"{tasks} tasks: launches {launches}")
            su.equal_to_reference(lu, run, ref, STEPS, f"{tasks} task(s) ({st['dist_backend']})")
    dry_txt = os.path.join(tmp, "dry.txt")
    dry = open(dry_txt).read() if os.path.exists(dry_txt) else ""
    cmd = next((x for x in dry.splitlines() if x.startswith("command:")), "")
    check("srun --mpi=pmix --ntasks=2" in cmd and "--cpus-per-task=1" in cmd
             and "trainer.threads=1" in cmd and f"{su.olmo_bin()} train" in cmd, f"dry run: {dry}")
    print("dry run:", cmd, flush=True)


if __name__ == "__main__":
    sys.exit(su.test_main("olmo_slurm_static_", body))
