"""Asynchronous checkpoints (issue 37 item 2), end to end through `olmo train` (tests/configs/tiny.yaml):
  1. trainer.async_checkpoint true vs false, a checkpoint every step: every checkpoint's tensor
     files are byte for byte the same and its state.json sections (minus the config, which names
     the switch) equal; the async run's metrics carry a checkpoint record per step with
     async true and ckpt_stall_s, the sync run's with async false; every checkpoint verifies.
  2. Free space: OLMO_TEST_FREE_BYTES (test_faults.h) below the checkpoint's size: the run
     fails with an error naming the run dir, the bytes needed and the bytes free, and writes
     no stepN nor stepN-tmp.
  4. The write is asynchronous (below): the writer thread of step 4's save is held at its named
     point (OLMO_TEST_HOLD=write:0:4:FILE, test_faults.h) while the loop trains on: steps 5 and 6
     are logged with step4 not committed (step4-tmp only); released, the commit lands at a later
     step (at_step >= 6) and the loop's stall for that save is below the writer's time.
  3. Retention never deletes the newest complete checkpoint: a committed but corrupt step9 (newer
     than the run's step4) is skipped at resume; with keep_last 1 the run's own step6 must stay
     (before the fix keep_last kept the corrupt step9 only and nothing loadable was left).
"""
import json
import os
import shutil
import subprocess
import tempfile
import time

import olmo_test as ot
from olmo_test import check, finish
from olmo_test import tiny_data as td


def ov(data, run, steps, extra=()):
    return [f"data.mix={data['mix']}", f"trainer.run_dir={run}", f"trainer.max_steps={steps}",
            "eval.at_start=false", "validation.interval=0", "trainer.threads=1",
            "trainer.progress=off", *extra]


def ckpt_events(run):
    return [r for r in ot.read_metrics(run, "info") if r.get("event") == "checkpoint"]


def state_sections(d):
    s = json.load(open(os.path.join(d, "state.json")))
    s.pop("config", None)
    return s


with tempfile.TemporaryDirectory() as tmp:
    data = td.make_data(os.path.join(tmp, "data"))
    # 1. async == sync, byte for byte.
    runs = {}
    for mode in ("true", "false"):
        run = os.path.join(tmp, f"run-{mode}")
        ot.olmo("train", td.tiny_config(), *ov(data, run, 4, ["trainer.save_interval=1",
                                                                "trainer.keep_last=4",
                                                                f"trainer.async_checkpoint={mode}"]))
        runs[mode] = run
        ev = ckpt_events(run)
        check([e["step"] for e in ev] == [1, 2, 3, 4], f"{mode}: checkpoint records {ev}")
        check(all(e["async"] == (mode == "true") for e in ev),
              f"{mode}: async flags {[e['async'] for e in ev]}")
        check(all(e["ckpt_stall_s"] >= 0 and e["ckpt_stall_s"] <= e["seconds"] + 1e-6 for e in ev),
              f"{mode}: stall within the save's wall time: {ev}")
        if mode == "true":
            check(all(e["staged_bytes"] > 0 for e in ev[:3]), f"staged bytes: {ev}")
            check(all(e["at_step"] >= e["step"] for e in ev), "commit at or after the save's step")
        p = ot.olmo("ckpt", "verify", run, check=False)
        check(p.returncode == 0 and "step4" in p.stdout + p.stderr, f"{mode}: verify: {p.stdout}{p.stderr}")
    for s in (1, 2, 3, 4):
        a, b = (os.path.join(runs[m], f"step{s}") for m in ("true", "false"))
        for f in sorted(os.listdir(b)):
            if f.startswith("tensors-"):
                check(open(os.path.join(a, f), "rb").read() == open(os.path.join(b, f), "rb").read(),
                      f"step{s}/{f}: async and sync bytes differ")
        check(state_sections(a) == state_sections(b), f"step{s}/state.json: sections differ")

    # 2. Free space below the checkpoint's size.
    run = os.path.join(tmp, "run-full")
    os.environ["OLMO_TEST_FREE_BYTES"] = "1000000"
    p = ot.olmo("train", td.tiny_config(), *ov(data, run, 2, ["trainer.save_interval=1"]), check=False)
    del os.environ["OLMO_TEST_FREE_BYTES"]
    out = p.stdout + p.stderr
    check(p.returncode != 0, f"full disk: exit {p.returncode}")
    check("not enough free space in " + run in out and "1000000 bytes" in out and "needs" in out,
          f"full disk: message names dir, need and free: {out[-800:]}")
    left = [d for d in os.listdir(run) if d.startswith("step")] if os.path.isdir(run) else []
    check(left == [], f"full disk: nothing written, found {left}")

    # 3. keep_last never deletes the newest complete checkpoint.
    run = os.path.join(tmp, "run-keep")
    ot.olmo("train", td.tiny_config(), *ov(data, run, 6, ["trainer.save_interval=2", "trainer.keep_last=1",
                                                      "trainer.hard_stop_steps=4"]))
    shutil.copytree(os.path.join(run, "step4"), os.path.join(run, "step9"))
    with open(os.path.join(run, "step9", "tensors-00000.bin"), "r+b") as f:
        f.seek(100)
        f.write(b"\xff\xff\xff\x7f")
    p = ot.olmo("train", td.tiny_config(), *ov(data, run, 6, ["trainer.save_interval=2", "trainer.keep_last=1"]),
                check=False)
    check(p.returncode == 0, f"resume past a corrupt newer checkpoint: {p.stdout[-500:]}{p.stderr[-500:]}")
    check(os.path.isdir(os.path.join(run, "step6")), f"keep_last deleted the newest complete one: {os.listdir(run)}")
    p = ot.olmo("ckpt", "verify", run, check=False)
    check(p.returncode == 0 and "step6" in p.stdout + p.stderr, f"newest complete after retention: {p.stdout}{p.stderr}")

    # 4. The write is asynchronous: its thread held, the loop goes on.
    run = os.path.join(tmp, "run-held")
    hold = os.path.join(tmp, "write.hold")
    env = dict(os.environ, OLMO_TEST_HOLD=f"write:0:4:{hold}")
    proc = subprocess.Popen([ot.bin_path(), "train", td.tiny_config(),
                             *ov(data, run, 12, ["trainer.save_interval=4",
                                                 "trainer.async_checkpoint=true"])],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    t0, seen = time.time(), []
    while proc.poll() is None and time.time() - t0 < 120:
        seen = [r["step"] for r in ot.read_metrics(run, "train")] if os.path.exists(hold) else []
        if 6 in seen:
            break
        time.sleep(0.02)
    held_dirs = sorted(d for d in os.listdir(run) if d.startswith("step")) if os.path.isdir(run) else []
    check(6 in seen and "step4" not in held_dirs and "step4-tmp" in held_dirs,
          "while step 4's write is held the loop trains steps 5 and 6, step4 not committed",
          f"train records {seen}, step dirs {held_dirs}")
    if os.path.exists(hold):
        open(hold, "w").close()  # released
    try:
        out = proc.communicate(timeout=120)[0]
    except subprocess.TimeoutExpired:
        proc.kill()
        out = proc.communicate()[0]
    check(proc.returncode == 0, f"held-writer run: exit {proc.returncode}",
          "" if proc.returncode == 0 else out[-800:])
    ev = {e["step"]: e for e in ckpt_events(run)}
    e4 = ev.get(4, {})
    check(e4.get("async") is True and e4.get("at_step", 0) >= 6,
          "step 4's commit lands after the loop went on (at_step >= 6)", f"{e4}")
    check(e4 and e4["ckpt_stall_s"] < e4["write_s"],
          "the loop's stall for step 4's save is below its writer's time",
          f"stall {e4.get('ckpt_stall_s')} s, write {e4.get('write_s')} s")
    if e4:
        print(f"held writer: step 4 committed at step {e4['at_step']}; stall {e4['ckpt_stall_s']:.4f} s, "
              f"write {e4['write_s']:.3f} s (held while steps 5-6 trained)")

finish("async_ckpt_test")
