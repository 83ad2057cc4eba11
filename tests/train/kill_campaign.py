"""Kill -9 campaign (issue 11, item 3): a tiny run (tests/configs/tiny.yaml, 16 steps, a checkpoint
every 2 steps, keep_last 2, held-out evaluation every 3 steps, the in-loop audit on) is SIGKILLed
at least 32 times at seeded random moments, each kill followed by a restart on the same run dir,
until it finishes. The kills are of six kinds, drawn in a seeded random order:
  hook:start   OLMO_TEST_KILL=start:0:R  -- right after the starting state is restored
  hook:step    OLMO_TEST_KILL=step:0:S   -- inside step S (after its first micro-batch), S random
  hook:ckpt    OLMO_TEST_KILL=ckpt:0:S   -- after the checkpoint data of step S, before commit
  hook:eval    OLMO_TEST_KILL=eval:0:S   -- inside the evaluation of step S (losses computed, not
                                            logged), S the next or the one after next that evaluates
  timed        SIGKILL from outside after a random delay in [0, half a whole run's wall time]
  ckpt_write   SIGKILL a random 0-15 ms after a stepN-tmp dir appeared (mid-checkpoint write)
The four hook kinds land at their named point whatever the machine's speed, so every phase is
hit on every run (the coverage check cannot depend on timing); the two timed kinds sample the
moments between. After each kill, where it landed is read from the run dir (a new stepN-tmp:
mid-checkpoint, with the files it held; no train record past the resumed step: start-up / first
step; the last step evaluates and has no eval record: evaluation; else a step) and, for a hook
kill, must be the hook's phase; the newest committed checkpoint must not be older than before,
and no restart may warn about a corrupt checkpoint. When a run
finishes before the kills are all done a new round starts in a fresh run dir.
Every finished round must equal a never-killed reference run bit for bit (every tensor, the
AdamW/skip-step/loader/trainer state), and its metrics.jsonl must hold each train step 1..16
exactly once and each (step, eval set) exactly once, with the reference's values, and no alarm.
Seed: OLMO_KILL_SEED (default 11); kills: OLMO_KILL_COUNT (default 32). The kinds, hook steps
and delays are the seed's; where a wall-clock kill lands also depends on the machine's speed
(never whether the test passes).
"""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import olmo_test as ot
from olmo_test import check, finish
from olmo_test import tiny_data as td

STEPS, SAVE, EVAL = 16, 2, 3


def overrides(data, run):
    return [f"data.mix={data['mix']}", f"trainer.run_dir={run}", f"trainer.max_steps={STEPS}",
            f"trainer.save_interval={SAVE}", "trainer.keep_last=2", f"eval.sets.val={data['val']}",
            f"eval.interval={EVAL}", "validation.interval=0", "trainer.threads=1",
            "trainer.async_checkpoint=true"]  # the background writer: kills land mid-write too


def launch(args, env_extra, log):
    exe = ot.bin_path()
    env = dict(os.environ)
    env.pop("OLMO_TEST_KILL", None)
    env.update(env_extra)
    out = open(log, "w")
    return subprocess.Popen([exe, "train", td.tiny_config(), *args], stdout=out,
                            stderr=subprocess.STDOUT, env=env), out


def committed(run):
    if not os.path.isdir(run):
        return []
    return sorted(int(x[4:]) for x in os.listdir(run) if x.startswith("step") and x[4:].isdigit()
                  and os.path.exists(os.path.join(run, x, "COMMITTED")))


def tmp_dirs(run):
    """name -> (mtime_ns, files) of stepN-tmp dirs."""
    out = {}
    if os.path.isdir(run):
        for x in os.listdir(run):
            if x.endswith("-tmp"):
                p = os.path.join(run, x)
                try:
                    out[x] = (os.stat(p).st_mtime_ns, sorted(os.listdir(p)))
                except FileNotFoundError:
                    pass
    return out


def metrics(run):
    path = os.path.join(run, "metrics.jsonl")
    recs = []
    if os.path.exists(path):
        for line in open(path):
            try:
                recs.append(json.loads(line))
            except ValueError:
                recs.append({"kind": "torn"})  # a line cut by the kill (the restart drops it)
    return recs


def train_steps(recs):
    return [r["step"] for r in recs if r.get("kind") == "train"]


def new_records(before, now, resume):
    """The records an attempt added: what follows those a restart at `resume` keeps (nothing
    while the log is as it was before the attempt, i.e. before its truncation)."""
    if now == before:
        return []
    kept = [r for r in before if resume and r.get("kind") != "torn" and r.get("step", 0) <= resume]
    return now[len(kept):]


def tensors(step_dir):
    idx = json.load(open(os.path.join(step_dir, "index.json")))
    out = {}
    for t in idx["tensors"]:
        with open(os.path.join(step_dir, t["file"]), "rb") as f:
            f.seek(t["byte_offset"])
            out[(t["name"], tuple(t["offset"]))] = f.read(t["nbytes"])
    return out


def state(step_dir):
    s = json.load(open(os.path.join(step_dir, "state.json")))
    return {k: s[k] for k in ("trainer", "optim", "skip_step", "loader", "rng")}


def wait_for(p, pred, timeout=60):
    """Polls pred() every 1 ms while p runs; True when it held, False if p exited first."""
    t0 = time.time()
    while p.poll() is None and time.time() - t0 < timeout:
        if pred():
            return True
        time.sleep(0.001)
    return False


def compare_round(run, ref, label):
    final = os.path.join(run, f"step{STEPS}")
    if not check(os.path.exists(os.path.join(final, "COMMITTED")), f"{label}: no final checkpoint"):
        return False
    a, b = tensors(os.path.join(ref, f"step{STEPS}")), tensors(final)
    diff = [n for n in a if a[n] != b.get(n)]
    ok = check(sorted(a) == sorted(b) and not diff, f"{label}: {len(diff)} tensors differ, "
               f"e.g. {diff[:2]}")
    ok &= check(state(final) == state(os.path.join(ref, f"step{STEPS}")),
                f"{label}: checkpoint state (optimizer/skip-step/loader/trainer) differs")
    rm, km = metrics(ref), metrics(run)
    ks = train_steps(km)
    ok &= check(sorted(ks) == list(range(1, STEPS + 1)) and len(ks) == STEPS,
                f"{label}: train steps in metrics.jsonl: {ks}")
    key = lambda r: (r["loss"], r["grad_norm"], r["lr"], r["batch_hash"])  # noqa: E731
    rt = {r["step"]: key(r) for r in rm if r.get("kind") == "train"}
    kt = {r["step"]: key(r) for r in km if r.get("kind") == "train"}
    ok &= check(rt == kt, f"{label}: train records differ from the reference")
    ev = lambda recs: sorted((r["step"], r["set"], r["loss"]) for r in recs  # noqa: E731
                             if r.get("kind") == "eval")
    ok &= check(ev(km) == ev(rm), f"{label}: eval records {ev(km)} != reference {ev(rm)}")
    ok &= check(not [r for r in km if r.get("kind") in ("alarm", "torn")],
                f"{label}: alarms or torn lines in metrics.jsonl")
    return ok


def main():
    seed = int(os.environ.get("OLMO_KILL_SEED", "11"))
    n_kills = int(os.environ.get("OLMO_KILL_COUNT", "32"))
    rng = random.Random(seed)
    tmp = tempfile.mkdtemp(prefix="olmo_kill_")
    t_start = time.time()
    try:
        data = td.make_data(os.path.join(tmp, "data"))
        # A held-out set of 96 instances (24 forwards): evaluation lasts long enough for the
        # timed kills to hit it too now and then.
        os.makedirs(os.path.join(tmp, "data", "val96"))
        td.stream(64 * 96, 300).tofile(os.path.join(tmp, "data", "val96", "part-0.npy"))
        data["val"] = os.path.join(tmp, "data", "val96")
        ref = os.path.join(tmp, "ref")
        t0 = time.time()
        p, out = launch(overrides(data, ref), {}, os.path.join(tmp, "ref.log"))
        rc = p.wait()
        out.close()
        ref_s = time.time() - t0
        if not check(rc == 0, f"reference run failed: {open(os.path.join(tmp, 'ref.log')).read()}"):
            sys.exit(1)  # the finally below removes tmp; SystemExit still fails the test
        print(f"reference run: {STEPS} steps in {ref_s:.1f} s")

        kinds = (["hook:start"] * 5 + ["hook:step"] * 5 + ["hook:ckpt"] * 5 + ["timed"] * 9 +
                 ["hook:eval"] * 4 + ["ckpt_write"] * 4)
        while len(kinds) < n_kills:
            kinds.append(rng.choice(["timed", "hook:eval", "ckpt_write", "hook:step"]))
        rng.shuffle(kinds)
        kills, landed, rounds, attempts, misses = 0, {}, 0, 0, 0
        run = None
        log = os.path.join(tmp, "attempt.log")
        while True:
            if run is None:
                rounds += 1
                run = os.path.join(tmp, f"run{rounds}")
            before_ckpt = committed(run)
            resume = before_ckpt[-1] if before_ckpt else 0
            before_tmp = tmp_dirs(run)
            before_m = metrics(run)
            kind = kinds[kills] if kills < len(kinds) else None
            env = {}
            if kind == "hook:start":
                env["OLMO_TEST_KILL"] = f"start:0:{resume}"
            elif kind == "hook:step":
                env["OLMO_TEST_KILL"] = f"step:0:{min(STEPS, resume + rng.randint(1, 3))}"
            elif kind == "hook:ckpt":
                env["OLMO_TEST_KILL"] = f"ckpt:0:{min(STEPS, resume + SAVE * rng.randint(1, 2))}"
            elif kind == "hook:eval":  # an evaluating step after the resume (16: the final one)
                due = [s for s in range(resume + 1, STEPS + 1) if s % EVAL == 0 or s == STEPS]
                env["OLMO_TEST_KILL"] = f"eval:0:{due[min(len(due) - 1, rng.randint(0, 1))]}"
            attempts += 1
            p, out = launch(overrides(data, run), env, log)
            if kind == "timed":
                wait_for(p, lambda: False, timeout=rng.uniform(0, 0.5 * ref_s))
            elif kind == "ckpt_write":
                if wait_for(p, lambda: any(k not in before_tmp or before_tmp[k][0] != v[0]
                                           for k, v in tmp_dirs(run).items())):
                    time.sleep(rng.uniform(0, 0.015))
            if kind in ("timed", "ckpt_write") and p.poll() is None:
                p.send_signal(signal.SIGKILL)
            rc = p.wait()
            out.close()
            text = open(log).read()
            check("warning: skipping checkpoint" not in text,
                  f"attempt {attempts}: a committed checkpoint was corrupt: {text[-400:]}")
            after = committed(run)
            check(not before_ckpt or (after and after[-1] >= before_ckpt[-1]),
                  f"attempt {attempts}: newest checkpoint went from {before_ckpt} to {after}")
            if rc == -signal.SIGKILL:
                kills += 1
                new_tmp = {k: v for k, v in tmp_dirs(run).items()
                           if k not in before_tmp or before_tmp[k][0] != v[0]}
                # This attempt's records: what follows the records a restart at `resume` keeps
                # (nothing new if it died before it truncated the log).
                now_m = metrics(run)
                new = new_records(before_m, now_m, resume)
                kept = now_m[:len(now_m) - len(new)]
                check(now_m == before_m or kept == [r for r in before_m if resume and
                                                    r.get("kind") != "torn" and
                                                    r.get("step", 0) <= resume],
                      f"attempt {attempts}: the restart changed records of steps <= {resume}")
                steps_new = train_steps(new)
                last = max(steps_new) if steps_new else 0
                evals = {r["step"] for r in new if r.get("kind") == "eval"}
                if kind == "hook:eval":
                    # Read from the run dir like a timed kill's: the evaluating step is the last
                    # train record and none of its eval records was written.
                    s = int(env["OLMO_TEST_KILL"].split(":")[2])
                    where = "evaluation (hook)"
                    check(last == s and s not in evals and f"at eval of step {s}" in text,
                          f"attempt {attempts}: the eval hook of step {s} landed elsewhere "
                          f"(last train record {last}, eval records at {sorted(evals)})")
                elif kind.startswith("hook:"):
                    where = {"hook:start": "start-up (hook)", "hook:step": "step (hook)",
                             "hook:ckpt": "checkpoint write (hook, tensors written)"}[kind]
                elif new_tmp:
                    files = sorted(set(f for _, fs in new_tmp.values() for f in fs))
                    where = "checkpoint write (" + (
                        "tensors only" if "state.json" not in files else
                        "state written" if "COMMITTED" not in files else "marker written") + ")"
                elif not steps_new:
                    where = "start-up / first step"
                elif last % EVAL == 0 and last not in evals and last < STEPS:
                    where = "evaluation"
                else:
                    where = "step"
                landed[where] = landed.get(where, 0) + 1
                print(f"kill {kills:2d} ({kind:10s} {env.get('OLMO_TEST_KILL', '')}): resumed "
                      f"at {resume}, landed in {where}, committed {after}")
                continue
            if not check(rc == 0, f"attempt {attempts} ({kind}) exited {rc}: {text[-600:]}"):
                break
            if kind is not None:
                misses += 1  # finished before the kill could land: counts nothing
            if committed(run)[-1:] == [STEPS]:
                compare_round(run, ref, f"round {rounds}")
                print(f"round {rounds}: finished; final checkpoint and metrics compared")
                run = None
                if kills >= n_kills:
                    break
            if attempts > 4 * n_kills:
                check(False, "too many attempts")
                break
        print(f"kill campaign: {kills} SIGKILLs in {attempts} attempts, {rounds} rounds, "
              f"{misses} attempts finished before their kill; landed: "
              + ", ".join(f"{k} {v}" for k, v in sorted(landed.items()))
              + f"; {time.time() - t_start:.0f} s")
        check(kills >= n_kills, f"only {kills} kills")
        phases = {k.split(" ")[0] for k in landed}
        check(phases >= {"start-up", "step", "evaluation", "checkpoint"},
              f"kills did not land in every phase: {landed}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish("kill_campaign (every finished round bitwise equal to the never-killed run)")


if __name__ == "__main__":
    main()
