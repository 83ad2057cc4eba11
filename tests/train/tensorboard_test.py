"""TensorBoard event files of `olmo train` (RUN/tb/, written by src/train/tfevents.cpp), read
back with TensorBoard's own reader (EventAccumulator, and its raw EventFileLoader) and compared
with metrics.jsonl; the "time" field of every metrics record.

1. A 20-step tiny run with held-out eval and validation every 5 steps and an injected data
   fault (audit alarms from step 5): every metrics.jsonl record has a wall-clock "time" (Unix
   seconds, ms, within the run, non-decreasing); the accumulator's scalars equal the records'
   (monitoring_util.expected: same tags, for each the same (step, float32 value, wall_time)
   list), among them train loss / lr / grad norm / tokens/s / MFU, eval and validation losses
   and the audit alarms.
2. Resume: save every 5 steps, the process SIGKILLs itself in step 13 (OLMO_TEST_KILL), so
   steps 11-12 past the step-10 checkpoint were logged; a new `olmo train` resumes and ends at
   20. Each train step 1..20 is then shown exactly once with metrics.jsonl's final value, by
   (a) a fresh accumulator, (b) the raw events of all files (the old file was cut to steps
   <= 10), (c) an accumulator that had loaded the crashed job's events live before the resume
   (TensorBoard's restart purge, triggered by the new file's SessionLog START at step 11);
   (d) the crashed run resumed after its tb/ was deleted (as a run dir of a build before event
   files): the new file is backfilled from metrics.jsonl's kept records, so all of 1..20 show.
Seen red: with `tb_->truncate_after(step)` removed from MetricsLog::truncate_after (no cut, no
START event), (a)-(c) fail (steps 11, 12 twice); without the START event only, (c) fails; with
the scalar value written as value + 1e-3 (src/train/tfevents.cpp), parts 1 and 2 fail;
without the backfill (MetricsLog::truncate_after), (d) fails (steps 1..10 missing).
Cost: four tiny runs, ~6 s.
With a run directory as argument (`tensorboard_test.py RUN`, e.g. the demo's) it only compares
that run's event files with its metrics.jsonl (each step once, every scalar equal).
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

import monitoring_util as mu
import olmo_test as ot
from olmo_test import check, finish

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader


def want(run):
    """metrics.jsonl's scalars as TensorBoard holds them: float32 values."""
    return {t: sorted((s, float(np.float32(v)), w) for s, v, w in vs)
            for t, vs in mu.expected(run).items()}


def view(acc):
    acc.Reload()
    return {t: sorted((e.step, e.value, e.wall_time) for e in acc.Scalars(t))
            for t in acc.Tags()["scalars"]}


def accumulator(run):
    return EventAccumulator(os.path.join(run, "tb"), size_guidance={"scalars": 0})


def raw_view(run):
    """tag -> sorted (step, value, wall_time) over every event of every file (no purge)."""
    out = {}
    tb = os.path.join(run, "tb")
    for name in sorted(os.listdir(tb)):
        for ev in LegacyEventFileLoader(os.path.join(tb, name)).Load():
            if ev.HasField("summary"):
                for v in ev.summary.value:
                    out.setdefault(v.tag, []).append((ev.step, v.simple_value, ev.wall_time))
    return {t: sorted(v) for t, v in out.items()}


def same(got, exp, what):
    missing = sorted(set(exp) - set(got))
    extra = sorted(set(got) - set(exp))
    diff = [t for t in exp if t in got and got[t] != exp[t]]
    first = ""
    if diff:
        g, e = got[diff[0]], exp[diff[0]]
        i = next((i for i, (x, y) in enumerate(zip(g, e)) if x != y), min(len(g), len(e)))
        first = f"; {diff[0]}[{i}]: TensorBoard {g[i:i + 2]} vs metrics.jsonl {e[i:i + 2]}"
    check(not missing and not extra and not diff,
          f"{what}: {len(exp)} tags equal to metrics.jsonl"
          + (f" (missing {missing[:4]}, extra {extra[:4]}, differ {diff[:4]}{first})"
             if missing or extra or diff else ""))


def check_existing(run):
    exp = want(run)
    got = view(accumulator(run))
    for tag in ("train/loss", "train/lr"):
        steps = [s for s, _, _ in got.get(tag, [])]
        check(steps and len(steps) == len(set(steps)), f"{tag}: {len(steps)} steps, each once")
    same(got, exp, f"{run}, EventAccumulator")
    finish("tensorboard")


def main():
    if len(sys.argv) > 1:
        return check_existing(sys.argv[1])
    tmp = tempfile.mkdtemp(prefix="olmo_tensorboard_")
    try:
        base = mu.train_args(tmp)

        # 1. one run: times, and every scalar against metrics.jsonl
        A = os.path.join(tmp, "A")
        t0 = time.time()
        ot.olmo("train", *base, f"trainer.run_dir={A}", *mu.AUDIT_FAULT)
        t1 = time.time()
        recs = mu.records(A)
        times = [r.get("time") for r in recs]
        check(all(isinstance(t, float) and t0 - 1 <= t <= t1 + 1 and round(t, 3) == t
                  for t in times), f"every one of {len(recs)} records has a 'time' within the run "
              f"in ms (first {times[:2]})")
        check(times == sorted(times), "record times are non-decreasing")
        files = os.listdir(os.path.join(A, "tb"))
        check(len(files) == 1 and files[0].startswith("events.out.tfevents."),
              f"one event file: {files}")
        exp = want(A)
        for tag in ("train/loss", "train/lr", "train/grad_norm", "train/tokens_per_s", "train/mfu",
                    "eval/val/loss", "validation/heldout/val"):
            check(tag in exp, f"metrics.jsonl has scalars for {tag}")
        check(any(t.startswith("alarm/audit/") for t in exp), "... and audit alarms")
        same(view(accumulator(A)), exp, "run A, EventAccumulator")

        # 2. crash past a checkpoint, resume: each step once, with the final values
        B = os.path.join(tmp, "B")
        runb = [*base, f"trainer.run_dir={B}", "trainer.save_interval=5"]
        env = dict(os.environ, OLMO_TEST_KILL="step:0:13")
        p = subprocess.run([ot.bin_path(), "train", *runb], env=env,
                           capture_output=True, text=True)
        steps = sorted(r["step"] for r in ot.read_metrics(B))
        check(p.returncode != 0 and steps == list(range(1, 13)),
              f"the first job died in step 13 (rc {p.returncode}) having logged steps 1..12 "
              f"(got {steps[:1]}..{steps[-1:]})")
        crashed = raw_view(B).get("train/loss", [])
        check([s for s, _, _ in crashed] == list(range(1, 13)),
              "its event file holds train/loss of steps 1..12")
        live = accumulator(B)
        view(live)  # a TensorBoard watching the run while it crashed
        C = os.path.join(tmp, "C")  # the same crashed run without its event files
        shutil.copytree(B, C)
        shutil.rmtree(os.path.join(C, "tb"))
        q = ot.olmo("train", *runb)
        check("resume" in q.stdout and "step10" in q.stdout, "the second job resumed at step10")
        exp = want(B)
        check([s for s, _, _ in exp.get("train/loss", [])] == list(range(1, 21)),
              "metrics.jsonl's final view: train steps 1..20 once each")
        fresh = view(accumulator(B))
        check([s for s, _, _ in fresh.get("train/loss", [])] == list(range(1, 21)),
              "(a) EventAccumulator: train/loss steps 1..20, each once")
        same(fresh, exp, "(a) run B, fresh EventAccumulator")
        same(raw_view(B), exp, "(b) run B, raw events of all files")
        same(view(live), exp, "(c) run B, the accumulator that had read the crashed job live")
        check(len(os.listdir(os.path.join(B, "tb"))) == 2, "one event file per job")
        ot.olmo("train", *base, f"trainer.run_dir={C}", "trainer.save_interval=5")
        same(raw_view(C), want(C), "(d) resumed without tb/ (backfilled from metrics.jsonl), raw")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish("tensorboard")


if __name__ == "__main__":
    main()
