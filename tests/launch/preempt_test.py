"""Preemption without a scheduler (issue 37 item 3, the part issue 39 builds on): a signal stops
the run at the next step boundary with a checkpoint of that step, exit 4 ("preempted"), and the
same command resumes bitwise equal to an uninterrupted run (every tensor, state section and
per-step record, each step once; `olmo ckpt verify`):
1. SIGTERM to a one-process `olmo train`;
2. SIGTERM to `olmo launch --np 2` (mpirun): the launcher forwards SIGUSR1 through mpirun to both
   ranks, exits 4 and starts nothing (no second launch, no requeue outside Slurm);
3. SIGTERM to one rank only (rank 1) under `olmo launch --np 2`: the per-step collective stops
   rank 0 at the same step; the launcher sees exit 4 from mpirun and restarts nothing.
Each signal comes inside a random step A (1..14; OLMO_TEST_SEED repeats one), at a named point:
the signalled rank holds there (OLMO_TEST_HOLD, after its first micro-batch), the test signals
it, waits until the held rank has caught the signal and releases it, so the run must stop at
step A exactly (no timing: the same on a slow or loaded machine).
The checkpoint interval (5) is chosen so that the stop step usually has no interval checkpoint
(the one written for the stop is exercised; the output says which).
Env: OLMO_BIN, OLMO_MPIRUN, OLMO_SOURCE_DIR. Exit 0 = pass.
"""
import os
import random
import signal
import subprocess
import sys
import time

import olmo_test as ot
import slurm_util as su  # test_main, pin_binary, the distributed helpers
from olmo_test import check
from olmo_test import tiny_data as td

STEPS = 20
SAVE = 5
# The signal comes inside a random step in 1..14. OLMO_TEST_SEED=N repeats a sequence (the seed
# is printed).
SEED = int(os.environ.get("OLMO_TEST_SEED", time.time_ns() % 1_000_000))
RNG = random.Random(SEED)


def env():
    e = su.job_env()
    for k in [k for k in e if k.startswith("SLURM_")]:
        del e[k]
    return e


def stop_record(du, run):
    return [r for r in ot.read_metrics(run, "info") if r.get("event") == "preempt_stop"]


def finish_and_compare(du, lu, name, cmd, run, ref, log):
    with open(log, "a") as out:
        p = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env(), timeout=240)
    check(p.returncode == 0, f"{name}: the resumed run exited {p.returncode}: {open(log).read()[-2000:]}")
    su.equal_to_reference(lu, run, ref, STEPS, f"{name}, resumed")


def case(du, lu, tmp, data, ref, name, cmd, target, rank=0):
    """Starts cmd with `rank` held inside a random step A, signals target(proc, pid of the held
    rank), releases the hold once that rank caught a signal; checks exit 4 and the stop at A."""
    at = RNG.randint(1, 14)
    run = os.path.join(tmp, name)
    cmd = [*cmd, td.tiny_config(), *lu.overrides(data, run, STEPS, [f"trainer.save_interval={SAVE}"])]
    log = os.path.join(tmp, f"{name}.log")
    hold = os.path.join(tmp, f"{name}.hold")
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                env=dict(env(), OLMO_TEST_HOLD=f"step:{rank}:{at}:{hold}"))
        try:
            pid = int(lu.wait_file(hold, 120, proc).split()[0])
            what = target(proc, pid)
            lu.wait_for(lambda: "\nsignal " in open(hold).read(), 60,
                        f"{name}: the held rank catching the signal", proc)
            open(hold, "w").close()  # released: it finishes step A and stops at its end
            rc = proc.wait(timeout=120)
        except AssertionError as e:
            check(False, f"{name}: {e}: {open(log).read()[-2000:]}")
            proc.kill()
            proc.wait()
            return run, cmd, log
    text = open(log).read()
    stops = stop_record(du, run)
    ok = check(rc == 4 and len(stops) == 1, f"{name}: exit {rc}, stop records {stops}: {text[-2000:]}")
    if ok:
        s = stops[0]["step"]
        check(s == at and stops[0]["checkpoint"].endswith(f"/step{s}")
                 and os.path.isdir(os.path.join(run, f"step{s}")),
                 f"{name}: the signal came inside step {at}: stopped after step {at} with its "
                 f"checkpoint", f"stop record {stops[0]}")
        print(f"{name}: {what} inside step {at} (rank {rank} held there): exit 4, stopped after "
              f"step {s} with checkpoint step{s} "
              f"({'the interval one' if s % SAVE == 0 else 'written for the stop'})", flush=True)
    return run, cmd, log


def body(tmp, du, lu):
    print(f"OLMO_TEST_SEED={SEED}", flush=True)
    exe = su.olmo_bin()
    data, ref = su.reference(du, lu, tmp, STEPS, [f"trainer.save_interval={SAVE}"])

    def term(proc, pid):
        proc.send_signal(signal.SIGTERM)
        return f"SIGTERM to pid {proc.pid}"

    # 1. olmo train, one process
    run, cmd, log = case(du, lu, tmp, data, ref, "train", [exe, "train"], term)
    finish_and_compare(du, lu, "train", cmd, run, ref, log)

    # 2. olmo launch --np 2: SIGTERM to the launcher
    launch = [exe, "launch", "--np", "2", "--mpirun", du.MPIRUN, "--mpi-args", lu.MPI_ARGS,
              "--poll", "0.05"]
    run, cmd, log = case(du, lu, tmp, data, ref, "launcher", launch, term)
    sig, pre = lu.events(run, "signal"), lu.events(run, "preempted")
    check(len(sig) == 1 and sig[0]["forwarded"] == "SIGUSR1" and len(pre) == 1
             and len(lu.events(run, "launch")) == 1 and not lu.events(run, "requeue"),
             f"launcher: events signal {sig}, preempted {pre}, launches {lu.events(run, 'launch')}")
    finish_and_compare(du, lu, "launcher", cmd, run, ref, log)

    # 3. olmo launch --np 2: SIGTERM to rank 1 only
    def rank1(proc, pid):
        os.kill(pid, signal.SIGTERM)
        return f"SIGTERM to rank 1 (pid {pid})"

    run, cmd, log = case(du, lu, tmp, data, ref, "rank", launch, rank1, rank=1)
    check(len(lu.events(run, "preempted")) == 1 and len(lu.events(run, "launch")) == 1
             and not lu.events(run, "failure"),
             f"rank: events {lu.events(run)}")
    finish_and_compare(du, lu, "rank", cmd, run, ref, log)

if __name__ == "__main__":
    sys.exit(su.test_main("olmo_preempt_", body, slurm=False))
