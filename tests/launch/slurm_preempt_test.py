"""`olmo launch` under a real Slurm, preemption (issue 39 item 3, issue 37 item 3): a 2-task
sbatch job (--requeue) on a one-node Slurm started by the test (slurm_util.py) gets USR1 in the
middle of the run, as `sbatch --signal=USR1@T` / `--signal=B:USR1@T` deliver it before a time
limit or preemption:
1. `scancel --signal=USR1 JOB`: Slurm signals the step's tasks (the ranks) directly;
2. `scancel --batch --signal=USR1 JOB`: Slurm signals the batch shell (here `exec olmo launch`),
   which forwards it to the ranks through srun.
3. as 2. on a 1-task job that Slurm gives 2 tasks when it is requeued (held while pending,
   `scontrol update NumTasks=2`): the run resumes at world size 2.
The signal lands inside step 4 at a named point: rank 0 holds there (OLMO_TEST_HOLD) until it
has caught the signal, so each way the ranks checkpoint step 4 and exit 4 (preempted), the launcher
restarts nothing, runs `scontrol requeue`, Slurm starts the job again (Restarts=1) and the
launcher resumes from that checkpoint; the run ends bitwise equal to a plain uninterrupted
`olmo train` (every tensor, state section and per-step record, each step once).
Skips (exit 77) naming the missing package where Slurm or munge is not installed.
Env: OLMO_BIN, OLMO_SOURCE_DIR. Exit 0 = pass.
"""
import os
import sys
import time

import olmo_test as ot
import slurm_util as su
from olmo_test import check
from olmo_test import tiny_data as td

STEPS = 20
SIGNAL_IN = 4  # the step rank 0 holds in while the signal comes (the stop step)
SAVE = 5  # checkpoint interval: the stop step needs a checkpoint of its own


def preempt_case(c, du, lu, tmp, data, ref, name, scancel_args, via_launcher, tasks=2, regrow=0):
    run = os.path.join(tmp, name)
    cfg = td.tiny_config()
    script = su.job_script(os.path.join(tmp, f"{name}.sh"), tasks,
                           [su.launch_line(cfg, lu.overrides(data, run, STEPS, [f"trainer.save_interval={SAVE}"]),
                                           ["--poll", "0.05"])],
                           ["#SBATCH --requeue"])
    t0 = time.time()
    hold = os.path.join(tmp, f"{name}.hold")
    job = c.sbatch(script, ["-D", tmp],
                   env=dict(su.job_env(), OLMO_TEST_HOLD=f"step:0:{SIGNAL_IN}:{hold}"))
    lu.wait_file(hold, 120)
    c.run(["scancel", *scancel_args, "--signal=USR1", job])
    at = SIGNAL_IN
    lu.wait_for(lambda: "\nsignal " in open(hold).read(), 60, f"{name}: rank 0 catching USR1")
    open(hold, "w").close()  # released (emptied: the requeued job passes step 4 without a hold)
    print(f"{name}: scancel {' '.join(scancel_args)} --signal=USR1 inside step {at}", flush=True)
    if regrow:
        # The requeued job comes back with another task count: held while pending (it waits
        # cred_expire before it may start), given NumTasks=regrow, released.
        lu.wait_for(lambda: lu.events(run, "requeue"), 60, f"{name}: the requeue")
        c.run(["scontrol", "hold", job])
        lu.wait_for(lambda: c.job(job).get("JobState") == "PENDING", 60, f"{name}: job pending")
        c.run(["scontrol", "update", f"JobId={job}", f"NumTasks={regrow}", f"NumCPUs={regrow}"])
        c.run(["scontrol", "release", job])
        print(f"{name}: the requeued job was given --ntasks={regrow}", flush=True)
    ok = c.completed(job, script, t0, name, restarts=1)
    stops = [r for r in ot.read_metrics(run, "info") if r.get("event") == "preempt_stop"]
    pre, req = lu.events(run, "preempted"), lu.events(run, "requeue")
    launches, fails = lu.events(run, "launch"), lu.events(run, "failure")
    check(len(stops) == 1 and len(pre) == 1 and len(req) == 1 and req[0]["done"] and not fails,
             f"{name}: preempt_stop records {stops}, preempted {pre}, requeue {req}, failures {fails}")
    got = lu.events(run, "signal")
    if via_launcher:
        check(len(got) == 1 and got[0]["forwarded"] == "SIGUSR1",
                 f"{name}: the launcher did not forward the signal: {got}")
    print(f"{name}: the launcher {'got the signal and forwarded it' if got else 'got no signal'}; "
          f"the ranks exited {4} (preempted)", flush=True)
    if stops:
        s = stops[0]["step"]
        check(stops[0]["checkpoint"].endswith(f"/step{s}") and s == at,
                 f"{name}: the stop record names no checkpoint of step {at}, the step the signal "
                 f"came in: {stops[0]}")
        check(len(launches) == 2 and launches[1]["checkpoint_step"] == s
                 and [e["world"] for e in launches] == [tasks, regrow or tasks],
                 f"{name}: the requeued job did not resume from step{s} on {regrow or tasks} "
                 f"task(s): {launches}")
        how = "the interval checkpoint" if s % SAVE == 0 else "written for the stop"
        print(f"{name}: stopped after step {s} with checkpoint step{s} ({how}; signal {stops[0]['signal']}); "
              f"requeued; resumed from step{launches[-1]['checkpoint_step']} on world sizes "
              f"{[e['world'] for e in launches]}", flush=True)
    if ok:
        su.equal_to_reference(lu, run, ref, STEPS, name)


def body(tmp, du, lu):
    data, ref = su.reference(du, lu, tmp, STEPS, [f"trainer.save_interval={SAVE}"])
    with su.Cluster(tmp) as c:
        preempt_case(c, du, lu, tmp, data, ref, "tasks", [], False)
        preempt_case(c, du, lu, tmp, data, ref, "batch", ["--batch"], True)
        preempt_case(c, du, lu, tmp, data, ref, "regrown", ["--batch"], True, tasks=1, regrow=2)


if __name__ == "__main__":
    sys.exit(su.test_main("olmo_slurm_preempt_", body))
