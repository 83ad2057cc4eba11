"""Helpers of the `olmo launch` tests: starting the launcher, reading its events
(RUN_DIR/launch.jsonl), finding the processes of a job's ranks (/proc: command line naming the
run dir, OMPI_COMM_WORLD_RANK in the environment), waiting for train records, and comparing a
finished run with a never-resized reference (every tensor, every state section, every per-step
record, `olmo ckpt verify`)."""
import json
import os
import signal
import subprocess
import time

import dist_util as du
import olmo_test as ot

MPI_ARGS = "--allow-run-as-root --oversubscribe"


def overrides(data, run, steps, extra=()):
    return du.base_overrides(data, run, steps=steps, extra=["trainer.save_interval=2", *extra])


def start(args, log, env=None):
    """`olmo launch ARGS` in the background, output to the file `log`; env: extra variables
    (e.g. OLMO_TEST_HOLD, passed on to every rank). Returns (Popen, the open log)."""
    exe = ot.bin_path()
    extra = env or {}
    env = dict(os.environ)
    env.pop("OMP_NUM_THREADS", None)
    env.update(extra)
    out = open(log, "w")
    return subprocess.Popen([exe, "launch", "--mpirun", du.MPIRUN, *args], stdout=out,
                            stderr=subprocess.STDOUT, env=env, start_new_session=True), out


def stop(proc, log):
    """Ends a test's launcher if it still runs (a failed wait): kill -9 to its whole process
    group (start() gives it one), so no mpirun or rank of it outlives the test; closes its log."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    log.close()


def events(run, name=None):
    p = os.path.join(run, "launch.jsonl")
    if not os.path.exists(p):
        return []
    ev = [json.loads(x) for x in open(p) if x.strip()]
    return [e for e in ev if name is None or e["event"] == name]


def last_train_step(run):
    try:
        recs = ot.read_metrics(run)
    except (FileNotFoundError, json.JSONDecodeError):
        return -1
    return max((r["step"] for r in recs), default=-1)


def rank_pids(run):
    """rank -> pid of the live `olmo train` processes of this run dir."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
            if b"train" not in cmd or f"trainer.run_dir={run}".encode() not in cmd:
                continue
            env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
        except OSError:
            continue
        for kv in env:
            if kv.startswith(b"OMPI_COMM_WORLD_RANK="):
                out[int(kv.split(b"=")[1])] = int(pid)
    return out


def restart_seconds(runs):
    """The longest a healthy job of these run dirs went from its launch (or the previous job's
    end) to its first new step: the `running` events' first_step_after_s / restart_latency_s.
    A --stall-timeout below it would stop a healthy relaunch as hung."""
    xs = [e.get(k) for r in runs for e in events(r, "running")
          for k in ("first_step_after_s", "restart_latency_s")]
    xs = [x for x in xs if x is not None]
    if not xs:
        raise AssertionError(f"no job of {runs} reached its first step: no restart time measured")
    return max(xs)


def stall_recovered(run, steps):
    """[] when the launcher stopped exactly one job of `run` as stalled, counted it as the one
    failure, relaunched from the newest checkpoint at that failure and finished (step`steps`);
    else the problems."""
    st, fail, launches = events(run, "stalled"), events(run, "failure"), events(run, "launch")
    probs = []
    if len(st) != 1 or [e["status"] for e in fail] != ["stalled"]:
        probs.append(f"stalled events {st}, failures {fail}")
    elif len(launches) != 2 or launches[1]["checkpoint_step"] != fail[0]["checkpoint_step"]:
        probs.append(f"not relaunched once from the newest checkpoint: {launches}")
    if not os.path.isdir(os.path.join(run, f"step{steps}")):
        probs.append(f"no step{steps}: the run did not finish")
    return probs


def wait_file(path, timeout, proc=None):
    """Waits for a file (an OLMO_TEST_HOLD point reached); returns its text."""
    wait_for(lambda: os.path.exists(path) and open(path).read().endswith("\n"), timeout,
             f"{path} (the hold point)", proc)
    return open(path).read()


def wait_for(cond, timeout, what, proc=None):
    t0 = time.time()
    while not cond():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the launcher exited ({proc.returncode}) while waiting for {what}")
        if time.time() - t0 > timeout:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)


def state_sections(step_dir):
    s = du.state(step_dir)
    return {"optim": s["optim"], "skip_step": s["skip_step"], "loader": s["loader"],
            "trainer": {k: s["trainer"][k] for k in ("step", "tokens_seen")},
            "fingerprint": s.get("fingerprint"), "rng": s.get("rng")}


def records(run):
    return [(r["step"], r["loss"], r["grad_norm"], r["lr"], r["batch_hash"])
            for r in ot.read_metrics(run)]


def compare_with_reference(run, ref, step):
    """[] when run's stepN equals ref's in every tensor and state section, the per-step records
    are equal (each step once) and `olmo ckpt verify` passes; else the differences."""
    probs = []
    d, rd = os.path.join(run, f"step{step}"), os.path.join(ref, f"step{step}")
    if not os.path.isdir(d):
        return [f"no checkpoint step{step} in {run}"]
    t, rt = du.tensors(d), du.tensors(rd)
    bad = [n for n in rt if n not in t or t[n].tobytes() != rt[n].tobytes()]
    if bad or sorted(t) != sorted(rt):
        probs.append(f"{len(bad)} of {len(rt)} tensors differ, e.g. {bad[:3]}")
    s, rs = state_sections(d), state_sections(rd)
    probs += [f"state section '{k}' differs: {s[k]} vs {rs[k]}" for k in rs if s[k] != rs[k]]
    got, want = records(run), records(ref)
    if got != want:
        probs.append(f"per-step records differ (steps {[r[0] for r in got]})")
    exe = ot.bin_path()
    p = subprocess.run([exe, "ckpt", "verify", d], capture_output=True, text=True)
    if p.returncode != 0:
        probs.append(f"olmo ckpt verify {d} failed: {p.stdout}{p.stderr}")
    return probs
