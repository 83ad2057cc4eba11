"""`olmo launch` under a real Slurm with two nodes, one of them lost (issue 39 item 2): two
slurmd on this machine (`slurmd -N n1`, `-N n2`, one CPU each; slurm_util.Cluster(nodes=...)),
a job `sbatch --nodes=2 --ntasks=2 --no-kill` running `olmo launch` (ranks over TCP on
loopback). Rank 1 (on n2) is held inside step 5 (OLMO_TEST_HOLD), then node n2 is lost as a
whole: its slurmd, the slurmstepd of the job step and the rank are SIGKILLed. The srun step
fails; Slurm marks n2 DOWN and, under --no-kill, keeps the job on n1; the launcher finds n2 gone
(the job's node list / an srun probe), relaunches on n1 alone (world size 1) from the newest
complete checkpoint, and the run ends bitwise equal to a plain uninterrupted `olmo train`.
Skips (exit 77) naming the missing package where Slurm or munge is not installed.
Env: OLMO_BIN, OLMO_SOURCE_DIR. Exit 0 = pass.
"""
import os
import signal
import sys
import time

import slurm_util as su
from olmo_test import check
from olmo_test import tiny_data as td

STEPS = 8
HOLD_STEP = 5


def ppid(pid):
    return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])


def body(tmp, du, lu):
    cfg = td.tiny_config()
    data, ref = su.reference(du, lu, tmp, STEPS)
    with su.Cluster(tmp, cpus=1, nodes=["n1", "n2"]) as c:
        run = os.path.join(tmp, "run")
        script = su.job_script(os.path.join(tmp, "job.sh"), 2,
                               [su.launch_line(cfg, lu.overrides(data, run, STEPS),
                                               ["--poll", "0.05", "--probe-timeout", "5"])],
                               ["#SBATCH --nodes=2", "#SBATCH --no-kill"])
        hold = os.path.join(tmp, "held")
        env = dict(su.job_env(), **su.mpi_env(), OLMO_TEST_HOLD=f"step:1:{HOLD_STEP}:{hold}")
        t0 = time.time()
        job = c.sbatch(script, ["-D", tmp], env=env)
        lu.wait_for(lambda: os.path.exists(hold), 120, f"rank 1 held in step {HOLD_STEP}")
        rank = int(open(hold).read().split()[0])
        node = dict(kv.split(b"=", 1) for kv in open(f"/proc/{rank}/environ", "rb").read().split(b"\0")
                    if b"=" in kv).get(b"SLURMD_NODENAME", b"?").decode()
        stepd = ppid(rank)
        slurmd = c.daemon_pid("slurmd n2", os.path.join(c.dir, "d-n2.pid"))
        check(node == "n2" and slurmd is not None, f"rank 1 runs on {node}, slurmd n2 pid {slurmd}")
        for pid in (slurmd, stepd, rank):
            if pid:
                os.kill(pid, signal.SIGKILL)
        t_lost = time.time()
        print(f"node n2 lost in step {HOLD_STEP}: SIGKILL to its slurmd ({slurmd}), the step's "
              f"slurmstepd ({stepd}) and rank 1 ({rank})", flush=True)
        ok = c.completed(job, script, t0, "after the lost node")
        print(f"{time.time() - t_lost:.1f} s from the loss to the end", flush=True)
        launches, fails = lu.events(run, "launch"), lu.events(run, "failure")
        check([e["world"] for e in launches] == [2, 1] and len(fails) == 1
                 and launches[1]["hosts"] == "n1:1" and launches[1]["checkpoint_step"] >= 2,
                 f"expected a relaunch on n1 alone from a checkpoint: launches {launches}, failures {fails}")
        gone = lu.events(run, "unreachable")
        if len(launches) == 2:
            print(f"failure: {fails[0]['status'] if fails else '?'}; n2 {'probed unreachable: ' + gone[0]['why'] if gone else 'left the job node list'}; "
                  f"relaunched on {launches[1]['hosts']} from step{launches[1]['checkpoint_step']}", flush=True)
        if ok:
            su.equal_to_reference(lu, run, ref, STEPS, "after the lost node")


if __name__ == "__main__":
    sys.exit(su.test_main("olmo_slurm_nodes_", body))
