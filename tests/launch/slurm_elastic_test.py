"""`olmo launch` under a real Slurm, a lost task (issue 39, items 2 and 5): in a 2-task sbatch
job on a one-node Slurm started by the test (slurm_util.py), task 1's process is killed (SIGKILL)
inside step 5 (held there by OLMO_TEST_HOLD, so the kill lands mid-step); srun ends the step (--kill-on-bad-exit), the launcher counts the
failure, starts a new srun step in the same allocation from the newest complete checkpoint, and
the run ends bitwise equal to a plain uninterrupted `olmo train` (every tensor, state section and
per-step record, each step once; `olmo ckpt verify`). The job itself completes (exit 0:0) and
was never requeued.
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
HOLD_STEP = 5  # task 1 stops inside this step (OLMO_TEST_HOLD) and is killed there


def body(tmp, du, lu):
    cfg = td.tiny_config()
    data, ref = su.reference(du, lu, tmp, STEPS)
    with su.Cluster(tmp) as c:
        run = os.path.join(tmp, "run")
        script = su.job_script(os.path.join(tmp, "job.sh"), 2,
                               [su.launch_line(cfg, lu.overrides(data, run, STEPS), ["--poll", "0.05"])])
        t0 = time.time()
        hold = os.path.join(tmp, "held")
        env = dict(su.job_env(), OLMO_TEST_HOLD=f"step:1:{HOLD_STEP}:{hold}")
        job = c.sbatch(script, ["-D", tmp], env=env)
        lu.wait_for(lambda: os.path.exists(hold), 120, f"task 1 held in step {HOLD_STEP}")
        pid = int(open(hold).read().split()[0])
        os.kill(pid, signal.SIGKILL)
        print(f"killed task 1 (pid {pid}) in step {HOLD_STEP}", flush=True)
        ok = c.completed(job, script, t0, "after the lost task", restarts=0)
        fails, launches = lu.events(run, "failure"), lu.events(run, "launch")
        check(len(fails) == 1 and len(launches) == 2 and launches[1]["checkpoint_step"] >= 2,
                 f"expected one failure and a relaunch from a checkpoint: failures {fails}, "
                 f"launches {launches}")
        if fails and launches:
            print(f"failure: {fails[0]['status']} after step {fails[0]['last_step']}; relaunched "
                  f"from step{launches[-1]['checkpoint_step']}", flush=True)
        if ok:
            su.equal_to_reference(lu, run, ref, STEPS, "after the lost task")


if __name__ == "__main__":
    sys.exit(su.test_main("olmo_slurm_elastic_", body))
