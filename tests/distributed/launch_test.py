"""`olmo launch` on bad input and at its limits (issue 21, item 2), on loopback:
1. a host list naming an unreachable host (the remote shell fails for it): a clear message
   naming the host and why, and the run starts and finishes on the rest; with --min-np above
   what the rest allows it stops with an error naming the host instead;
2. dist.reduce=fast: a shrink to a slot count that does not divide the micro-batches (8 per
   step; 4 slots, a kill of rank 3 held inside step 4 by OLMO_TEST_HOLD, 3 left): the launcher
   says so and relaunches on 2, the largest count that does; under exact (`--dry-run`) 3 slots
   run 3 processes;
3. a shrink below --min-np (a kill of rank 0 held inside step 4, 1 slot left, --min-np 2): stops with an error naming the
   slots and the newest complete checkpoint;
4. a job that keeps failing (every job dies in step 3, OLMO_TEST_KILL): stops after
   --max-failures with an error naming the failures and the newest checkpoint;
5. a hung job (rank 1 held inside step 4 by OLMO_TEST_HOLD: no progress, no exit): stopped
   after --stall-timeout, counted as a failure, relaunched, and the run finishes; the timeout is
   3x the longest restart (launch -> first new step) measured in cases 1-2 of this run, so a slow
   relaunch is never taken for a hang;
5b. the stall watchdog on by default (no --stall-timeout): rank 1, held inside step 4
   (OLMO_TEST_HOLD), is frozen by SIGSTOP and its hold released (it stays frozen) and is found by the timeout derived from the step times of metrics.jsonl (max(--stall-floor,
   10 x the median step gap, 2 x the longest checkpoint gap); --stall-floor is lowered from its
   60 s so that the test is short) and the job is relaunched from the newest checkpoint and
   finishes (mpirun, stopped with SIGTERM, sends the frozen rank SIGCONT and then SIGTERM: the
   ranks write a preemption checkpoint, which the relaunch starts from); the "stalled" event carries the derived timeout and its inputs, and the measured
   time without progress is >= that timeout; `--dry-run` names the rule, and
   `--stall-timeout 0` turns the watchdog off;
6. a run dir locked by a live job: refused at once, naming the holder's pid, nothing launched;
   a config pinning data.processes: refused.
Env: OLMO_BIN, OLMO_MPIRUN. Exit 0 = pass.
"""
import fcntl
import os
import shutil
import signal
import subprocess
import tempfile
import time

import dist_util as du
import launch_util as lu
import olmo_test as ot
from olmo_test import check, finish
from olmo_test import tiny_data as td

STALL_MARGIN = 3  # --stall-timeout = this x the longest restart measured in the same test


def launch(args, env=None, timeout=240):
    exe = ot.bin_path()
    e = dict(os.environ)
    e.pop("OMP_NUM_THREADS", None)
    e.update(env or {})
    return subprocess.run([exe, "launch", "--mpirun", du.MPIRUN, *args], capture_output=True, text=True, env=e,
                          timeout=timeout)


def first_line(text, key):
    return next((x for x in text.splitlines() if key in x), "(none)")


def main():
    tmp = tempfile.mkdtemp(prefix="olmo_launch_test_")
    try:
        data = td.make_data(os.path.join(tmp, "data"), train_tokens=64 * 12 * 12)
        agent = os.path.join(tmp, "agent.sh")
        with open(agent, "w") as f:  # a remote shell for which node-gone does not answer
            f.write('#!/bin/sh\nif [ "$1" = node-gone ]; then\n'
                    '  echo "ssh: connect to host node-gone port 22: No route to host" >&2\n'
                    '  exit 255\nfi\nshift\nexec "$@"\n')
        os.chmod(agent, 0o755)
        base = ["--mpi-args", lu.MPI_ARGS, "--poll", "0.05", "--probe-interval", "0.1"]

        # 1. unreachable host
        run = os.path.join(tmp, "unreachable")
        p = launch(["--hosts", "localhost:2,node-gone:2", "--rsh-agent", agent, *base,
                    td.tiny_config(), *lu.overrides(data, run, 4)])
        msg = first_line(p.stderr + p.stdout, "node-gone (2 slots) is unreachable")
        check(p.returncode == 0, f"unreachable host: rc {p.returncode}: {p.stderr[-800:]}")
        check("No route to host" in msg, f"unreachable host: message {msg}")
        check([e["world"] for e in lu.events(run, "launch")] == [2],
              f"unreachable host: launches {lu.events(run, 'launch')}")
        check(os.path.isdir(os.path.join(run, "step4")), "unreachable host: the run did not finish")
        print("unreachable host:", msg.strip(), "-> ran on", lu.events(run, "launch")[0]["hosts"],
              flush=True)
        p = launch(["--hosts", "localhost:2,node-gone:2", "--rsh-agent", agent, "--min-np", "3",
                    *base, td.tiny_config(), *lu.overrides(data, os.path.join(tmp, "u2"), 4)])
        err = first_line(p.stderr, "error")
        check(p.returncode == 1 and "below --min-np 3" in err and "node-gone" in err,
              f"unreachable host below the minimum: rc {p.returncode}: {p.stderr[-600:]}")
        print("unreachable host, --min-np 3:", err.strip(), flush=True)

        # 2. shrink to a count that does not divide the 8 micro-batches
        run = run_nondiv = os.path.join(tmp, "nondiv")
        hostfile = os.path.join(tmp, "hostfile")
        with open(hostfile, "w") as f:
            f.write("localhost slots=4\n")
        ov8 = lu.overrides(data, run, 10, extra=["data.global_batch_tokens=512",
                                                 "dist.reduce=fast"])
        hold = os.path.join(tmp, "nondiv.hold")
        proc, log = lu.start(["--hostfile", hostfile, *base, td.tiny_config(), *ov8],
                             os.path.join(tmp, "nondiv.log"), env={"OLMO_TEST_HOLD": f"step:3:4:{hold}"})
        try:
            pid = int(lu.wait_file(hold, 120, proc).split()[0])  # rank 3, inside step 4
            with open(hostfile, "w") as f:
                f.write("localhost slots=3\n")
            os.kill(pid, signal.SIGKILL)
            proc.wait(timeout=240)
        finally:
            lu.stop(proc, log)
        out = open(os.path.join(tmp, "nondiv.log")).read()
        msg = first_line(out, "does not divide")
        check(proc.returncode == 0, f"non-dividing shrink: rc {proc.returncode}: {out[-1500:]}")
        check([e["world"] for e in lu.events(run, "launch")] == [4, 2],
              f"non-dividing shrink: worlds {[e['world'] for e in lu.events(run, 'launch')]}")
        check("3 slots available, but 3 does not divide the 8 micro-batches" in msg and
              "running on 2 processes" in msg, f"non-dividing shrink: message {msg}")
        print("shrink 4 -> 3 slots with 8 micro-batches:", msg.strip(), flush=True)
        # dist.reduce=exact: any count up to the 8 instances of a step (3 of 4 slots included)
        ov8x = lu.overrides(data, os.path.join(tmp, "exact3"), 10,
                            extra=["data.global_batch_tokens=512"])
        p = launch(["--hosts", "localhost:3", "--dry-run", td.tiny_config(), *ov8x])
        check(p.returncode == 0 and "world: 3 processes (the largest count up to the 8 instances"
              in p.stdout, f"exact on 3 slots: {p.stdout[-600:]}{p.stderr[-300:]}")

        # 3. below the minimum after a shrink
        run = os.path.join(tmp, "below")
        with open(hostfile, "w") as f:
            f.write("localhost slots=2\n")
        hold = os.path.join(tmp, "below.hold")
        proc, log = lu.start(["--hostfile", hostfile, "--min-np", "2", *base,
                              td.tiny_config(), *lu.overrides(data, run, 10)],
                             os.path.join(tmp, "below.log"), env={"OLMO_TEST_HOLD": f"step:0:4:{hold}"})
        try:
            pid = int(lu.wait_file(hold, 120, proc).split()[0])  # rank 0, inside step 4
            with open(hostfile, "w") as f:
                f.write("localhost slots=1\n")
            os.kill(pid, signal.SIGKILL)
            proc.wait(timeout=120)
        finally:
            lu.stop(proc, log)
        out = open(os.path.join(tmp, "below.log")).read()
        err = first_line(out, "error")
        check(proc.returncode == 1 and "1 slot available" in err and "below --min-np 2" in err
              and "/step" in err, f"below the minimum: rc {proc.returncode}: {out[-1500:]}")
        print("shrink below --min-np:", err.strip(), flush=True)

        # 4. a job that keeps failing
        run = os.path.join(tmp, "failing")
        p = launch(["--np", "2", "--max-failures", "2", *base, td.tiny_config(),
                    *lu.overrides(data, run, 10)], env={"OLMO_TEST_KILL": "step:1:3"})
        err = first_line(p.stderr, "error")
        check(p.returncode == 1 and "failed 2 times" in err and "--max-failures 2" in err and
              err.rstrip().endswith("resumes from it)") and "step2" in err,
              f"max failures: rc {p.returncode}: {p.stderr[-1500:]}")
        check(len(lu.events(run, "failure")) == 2, f"max failures: {lu.events(run, 'failure')}")
        print("a job failing every time, --max-failures 2:", err.strip(), flush=True)

        # 5. a hung job: rank 1 holds inside step 4 (OLMO_TEST_HOLD: alive, no progress). The
        # --stall-timeout is 3x the longest restart measured above (cases 1-2: launch or the
        # previous job's end -> the first new step), so the relaunch is never taken for a hang.
        restart_s = lu.restart_seconds([os.path.join(tmp, "unreachable"), run_nondiv])
        stall = round(STALL_MARGIN * restart_s, 2)
        run = os.path.join(tmp, "hung")
        hold = os.path.join(tmp, "hung.hold")
        proc, log = lu.start(["--np", "2", "--stall-timeout", str(stall), *base,
                              td.tiny_config(), *lu.overrides(data, run, 8)],
                             os.path.join(tmp, "hung.log"), env={"OLMO_TEST_HOLD": f"step:1:4:{hold}"})
        try:
            lu.wait_file(hold, 120, proc)
            proc.wait(timeout=120 + 4 * stall)
        finally:
            lu.stop(proc, log)
        out = open(os.path.join(tmp, "hung.log")).read()
        probs = lu.stall_recovered(run, 8)
        check(proc.returncode == 0 and not probs,
              f"hung job (--stall-timeout {stall} s from a measured restart of {restart_s:.2f} s): "
              f"rc {proc.returncode}, {probs}: {out[-1500:]}")
        relaunch = [e["first_step_after_s"] for e in lu.events(run, "running")][1:]
        print(f"hung job (rank 1 held in step 4; --stall-timeout {stall} s = {STALL_MARGIN} x the "
              f"longest restart measured here, {restart_s:.2f} s):",
              first_line(out, "made no progress").strip(), "-> relaunched (first step after "
              f"{', '.join(f'{x:.2f}' for x in relaunch)} s), finished", flush=True)

        # 5b. the default (derived) watchdog finds a rank frozen by SIGSTOP
        stall_floor = round(STALL_MARGIN * restart_s, 2)
        run = os.path.join(tmp, "frozen")
        hold = os.path.join(tmp, "frozen.hold")
        proc, log = lu.start(["--np", "2", "--stall-floor", str(stall_floor), *base,
                              td.tiny_config(), *lu.overrides(data, run, 40)],
                             os.path.join(tmp, "frozen.log"), env={"OLMO_TEST_HOLD": f"step:1:4:{hold}"})
        try:
            frozen = int(lu.wait_file(hold, 120, proc).split()[0])  # rank 1, inside step 4
            os.kill(frozen, signal.SIGSTOP)
            t_frozen = time.time()
            # Released (emptied: a relaunch passing step 4 again goes on), but stopped: the
            # rank sees it only after mpirun's SIGCONT.
            open(hold, "w").close()
            try:  # a healthy run of these 40 steps takes a few seconds
                proc.wait(timeout=60 + 4 * stall_floor)
            except subprocess.TimeoutExpired:
                check(False, f"frozen rank: the job was not stopped {60 + 4 * stall_floor:.0f} s after "
                      f"SIGSTOP without --stall-timeout (the default watchdog)")
        finally:
            lu.stop(proc, log)
        out = open(os.path.join(tmp, "frozen.log")).read()
        st = lu.events(run, "stalled")
        probs = lu.stall_recovered(run, 40)
        check(proc.returncode == 0 and not probs,
              f"frozen rank, derived watchdog: rc {proc.returncode}, {probs}: {out[-1500:]}")
        if st:
            e = st[0]
            derived = max(stall_floor, 10 * e["median_step_gap_s"], 2 * e["longest_heavy_gap_s"])
            check(abs(e["timeout_s"] - derived) < 1e-6 and e["seconds"] >= e["timeout_s"] and
                  e["plain_gaps"] >= 1 and e["median_step_gap_s"] > 0 and "median step gap" in e["rule"],
                  f"frozen rank: the stalled event does not show a derived timeout: {e}")
            check(e["time"] - t_frozen < e["timeout_s"] + 30,
                  f"frozen rank: found {e['time'] - t_frozen:.1f} s after SIGSTOP, timeout {e['timeout_s']}")
            print(f"frozen rank (SIGSTOP after step {e['step']}, no --stall-timeout, --stall-floor "
                  f"{stall_floor}): stalled after {e['seconds']:.2f} s, derived timeout "
                  f"{e['timeout_s']:.2f} s = {e['rule']} -> relaunched from step"
                  f"{lu.events(run, 'launch')[-1]['checkpoint_step']}, finished", flush=True)
        p = launch(["--np", "2", "--dry-run", td.tiny_config(), *lu.overrides(data, run, 40)])
        check(p.returncode == 0 and "stall watchdog: derived: max(60 s, 10 x the median step gap" in p.stdout,
              f"dry run: the default watchdog is not named: {p.stdout[-600:]}")
        p = launch(["--np", "2", "--dry-run", "--stall-timeout", "0", td.tiny_config(),
                    *lu.overrides(data, run, 40)])
        check(p.returncode == 0 and "stall watchdog: off (--stall-timeout 0)" in p.stdout,
              f"dry run, --stall-timeout 0: {p.stdout[-600:]}")

        # 6. a locked run dir; data.processes pinned
        run = os.path.join(tmp, "locked")
        os.makedirs(run)
        with open(os.path.join(run, ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            lock.write(f"{os.getpid()}\n")
            lock.flush()
            p = launch(["--np", "2", *base, td.tiny_config(), *lu.overrides(data, run, 4)])
        err = first_line(p.stderr, "error")
        check(p.returncode == 1 and f"locked by pid {os.getpid()}" in err and
              not lu.events(run, "launch"), f"locked run dir: rc {p.returncode}: {p.stderr[-600:]}")
        print("locked run dir:", err.strip(), flush=True)
        p = launch(["--np", "2", *base, td.tiny_config(),
                    *lu.overrides(data, os.path.join(tmp, "pinned"), 4), "data.processes=2"])
        err = first_line(p.stderr, "error")
        check(p.returncode == 1 and "data.processes" in err, f"pinned world: {p.stderr[-400:]}")
        print("data.processes pinned:", err.strip(), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish("launch bad input")


if __name__ == "__main__":
    main()
