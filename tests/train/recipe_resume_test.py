"""The recipe is part of the checkpoint (issue 37 item 1), end to end through `olmo train`.

A tiny run (configs/tiny.yaml, 1 process, 1 thread) trains 2 of 4 steps and checkpoints; then:
  1. every field of the checkpoint's "recipe" section (the fields whose class is trajectory,
     schedule, rounding or model; the list comes from the checkpoint, not from this test),
     changed alone on resume, is never accepted: the resume exits non-zero, the run dir is left
     as it was (every file but the run lock byte for byte), and, unless the changed config is
     refused by validation first, the refusal names the field with its checkpoint and new value
     and the allow flag (model fields: that a resume cannot change them). The fields the issue
     names must be refusals;
  2. fields that do not change the trajectory (intervals, layout, reporting, start-only fields,
     data.micro_batch_tokens under dist.reduce=exact)
     are accepted, and the resumed step is bitwise equal to the resume without the change
     (tensors read with numpy, tests/distributed/dist_util.py);
  3. the allow path: `--allow-recipe-change lr,data.seed` is accepted, logged in metrics.jsonl
     with the step, written to the batch ledger and reported by `olmo audit` with the step; the
     next resume keeps the new recipe without a flag and refuses the old one; the alias
     trainer.allow_schedule_change=true allows a changed trainer.max_steps.
The comparison itself, for every field of the table: tests/train/recipe_check_test.cpp.
Env: OLMO_BIN, OLMO_SOURCE_DIR. Exit 0 = pass.
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
import dist_util as du  # noqa: E402
import olmo_test as ot
from olmo_test import FAILS, check
from olmo_test import tiny_data as td

BIN = ot.bin_path()

# Fields the issue names: a change of each must be refused by the recipe check itself, and once
# allowed take effect (step 3 differs from the unchanged resume's), but those of NO_EFFECT_HERE:
# loss_normalization (global and per_rank agree at 1 process on fsl), max_steps (step 3 is in
# the warm-up, whose LR does not depend on t_max) and the model fields (never allowed).
MUST_REFUSE = ["optim.lr", "optim.betas", "optim.eps", "optim.weight_decay",
               "optim.embedding_weight_decay", "optim.max_grad_norm", "trainer.z_loss_multiplier",
               "scheduler.warmup_steps", "trainer.max_steps", "data.global_batch_tokens",
               "data.seq_len", "data.mix", "data.seed",
               "dist.reduce", "trainer.loss_normalization", "model.d_model"]
NO_EFFECT_HERE = {"trainer.loss_normalization", "trainer.max_steps", "model.d_model",
                  "data.seq_len"}


def train(run, data, *extra, steps=3):
    """`olmo train` of the tiny run to step `steps` of a 4-step schedule."""
    return subprocess.run([BIN, "train", td.tiny_config(), f"data.mix={data['mix']}",
                           f"trainer.run_dir={run}", "trainer.threads=1", "trainer.max_steps=4",
                           f"trainer.hard_stop_steps={steps}", *extra],
                          capture_output=True, text=True, timeout=300)


def snapshot(run):
    """Every file of the run dir (relative path -> sha256) but the run lock (rewritten by every
    start, before the checkpoint is read)."""
    out = {}
    for root, _, files in os.walk(run):
        for f in files:
            p = os.path.join(root, f)
            if f != ".lock":
                out[os.path.relpath(p, run)] = hashlib.sha256(open(p, "rb").read()).hexdigest()
    return out


def choices():
    """key -> allowed values of the choice fields, from the generated config reference."""
    ref = subprocess.run([BIN, "info", "--config-reference"], capture_output=True, text=True,
                         check=True).stdout
    return {m.group(1): re.findall(r"`([^`]+)`", m.group(2))
            for m in re.finditer(r"^\| `([^`]+)` \| one of ([^|]+) \|", ref, re.M)}


def mutate(key, v, ch, data):
    """Another value of the same type for `key`, valid where a plain one is."""
    if key == "data.mix":
        return data["mix2"]
    if key == "data.root":
        return os.path.dirname(data["mix"])  # the same files, under another path string
    if key in ch:
        return next(c for c in ch[key] if c != v)
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return v * 2 if v > 0 else v + 2
    if isinstance(v, float):
        return v * 2 if v else 0.5
    if isinstance(v, list):  # the first element halved (betas, window_pattern)
        return ([v[0] // 2 if isinstance(v[0], int) else v[0] / 2] + v[1:]) if v else [3]
    return v + "_x"


def main():
    t_start = time.time()
    tmp = tempfile.mkdtemp(prefix="olmo_recipe_resume_")
    try:
        data = td.make_data(os.path.join(tmp, "data"))
        base = os.path.join(tmp, "base")
        p = train(base, data, steps=2)
        check(p.returncode == 0, f"base run to step 2: rc {p.returncode} {p.stderr[-300:]}")
        if p.returncode:
            return 1
        recipe = du.state(os.path.join(base, "step2"))["recipe"]["fields"]
        ch = choices()
        before = snapshot(base)

        ref = os.path.join(tmp, "ref")
        shutil.copytree(base, ref)
        check(train(ref, data).returncode == 0, "the unchanged resume to step 3")
        want = du.tensors(os.path.join(ref, "step3"))

        # 1. every recorded field, changed alone: never accepted; named when the check is
        # reached; allowed, it takes effect (or says why it cannot)
        refused, config_errors, effective, same_bits, allow_errors = [], [], [], [], []
        t0 = time.time()
        for key, old in recipe.items():
            if key == "data.micro_batch_tokens":
                continue  # free between two dist.reduce=exact runs: part 2 below
            new = mutate(key, old, ch, data)
            q = train(base, data, f"{key}={json.dumps(new)}")
            err = q.stderr.strip()
            check(q.returncode != 0, f"{key}: {json.dumps(old)} -> {json.dumps(new)} on resume "
                  f"is not accepted (rc {q.returncode})")
            if "this resume changes the recipe" in err:
                lines = [ln for ln in err.splitlines() if ln.startswith("  ")]
                mine = [ln for ln in lines if ln.startswith(f"  {key}: ")]
                check(len(lines) == 1 and len(mine) == 1 and " (checkpoint) -> " in mine[0] and
                      "(this run)" in mine[0] and json.dumps(old, separators=(",", ":")) in mine[0],
                      f"{key}: the refusal names it alone, old and new value: {lines}")
                cannot = bool(mine) and "a resume cannot change it" in mine[0]
                check(cannot if key.startswith("model.") and key != "model.precision" else
                      cannot or f"--allow-recipe-change {key}" in mine[0],
                      f"{key}: the refusal says how to allow it (or that it cannot be): {mine}")
                refused.append(key)
                if not cannot:
                    r = os.path.join(tmp, "allow")
                    shutil.copytree(base, r)
                    q = train(r, data, f"{key}={json.dumps(new)}", "--allow-recipe-change", key)
                    if q.returncode != 0:
                        allow_errors.append((key, q.stderr.strip().splitlines()[-1][:200]))
                    elif du.bitwise_equal(du.tensors(os.path.join(r, "step3")), want):
                        same_bits.append(key)
                    else:
                        effective.append(key)
                    shutil.rmtree(r)
            else:
                config_errors.append((key, err.splitlines()[-1][:160] if err else "no message"))
            after = snapshot(base)
            check(after == before, f"{key}: the refused resume left the run dir as it was")
            if after != before:
                return 1  # the later cases would start from another state
        print(f"{len(recipe)} recorded fields changed one at a time in {time.time() - t0:.1f} s: "
              f"{len(refused)} refused by the recipe check, {len(config_errors)} refused "
              f"earlier by the config's own validation:", flush=True)
        for key, e in config_errors:
            print(f"  {key}: {e}", flush=True)
        for key in MUST_REFUSE:
            check(key in refused, f"{key}: a change is refused by the recipe check")
        print(f"allowed one at a time: {len(effective)} took effect (step 3 differs from the "
              f"unchanged resume), {len(same_bits)} gave the same bits (unused by this config): "
              f"{', '.join(same_bits)}; {len(allow_errors)} stopped by a later check:", flush=True)
        for key, e in allow_errors:
            print(f"  {key}: {e}", flush=True)
        for key in MUST_REFUSE:
            if key not in NO_EFFECT_HERE:
                check(key in effective, f"{key}: allowed on resume, the change takes effect")
        demo = os.path.join(tmp, "demo")  # a copy: were it accepted, base would move on
        shutil.copytree(base, demo)
        m = re.search(r"^.*this resume changes the recipe.*(\n  .*)+",
                      train(demo, data, "optim.eps=1e-6").stderr, re.M)
        print("the refusal of optim.eps=1e-6:\n" + (m.group(0) if m else "(none)"), flush=True)

        # 2. fields that do not change the trajectory: accepted, and the same bits
        same = ["trainer.log_interval=2", "trainer.save_interval=1", "trainer.keep_last=5",
                "eval.interval=1", "dist.bucket_mb=1", "dist.exact_accumulator=sharded",
                "dist.zero_stage=3", "dist.overlap=false", "data.micro_batch_tokens=64",
                "model.activation_checkpointing.mode=full", "data.processes=1",
                "audit.enabled=false", "trainer.init_seed=99", "trainer.max_nonfinite_steps=3",
                "validation.interval=1", "trainer.profile=true"]
        for kv in same:
            r = os.path.join(tmp, "same_" + kv.split("=")[0])
            shutil.copytree(base, r)
            q = train(r, data, kv)
            ok = q.returncode == 0 and os.path.isdir(os.path.join(r, "step3"))
            check(ok and du.bitwise_equal(du.tensors(os.path.join(r, "step3")), want),
                  f"{kv} on resume: accepted, step 3 bitwise equal to the unchanged resume "
                  f"(rc {q.returncode} {q.stderr.strip()[-200:]})")
            shutil.rmtree(r)
        # the thread count is the machine's (it may change the last bits: not compared)
        r = os.path.join(tmp, "threads")
        shutil.copytree(base, r)
        q = train(r, data, "trainer.threads=2")
        check(q.returncode == 0 and os.path.isdir(os.path.join(r, "step3")),
              f"trainer.threads=2 on resume: accepted (rc {q.returncode} {q.stderr.strip()[-200:]})")
        shutil.rmtree(r)

        # 3. the allow path, the ledger and olmo audit
        run = os.path.join(tmp, "allowed")
        shutil.copytree(base, run)
        q = train(run, data, "optim.lr=1e-3", "optim.eps=1e-6", "--allow-recipe-change",
                  "lr,optim.eps")
        check(q.returncode == 0 and "the recipe changed at this resume" in q.stdout + q.stderr,
              f"allowed lr and optim.eps: accepted with a warning (rc {q.returncode} "
              f"{q.stderr.strip()[-300:]})")
        ev = [r for r in ot.read_metrics(run, "info") if r.get("event") == "recipe_change"]
        check(len(ev) == 1 and ev[0]["step"] == 2 and
              {c["key"] for c in ev[0]["changes"]} == {"optim.lr", "optim.eps"},
              f"metrics.jsonl logs the change at step 2: {ev}")
        check(not du.bitwise_equal(du.tensors(os.path.join(run, "step3")), want),
              "the allowed change took effect (step 3 differs from the unchanged resume)")
        a = subprocess.run([BIN, "audit", run], capture_output=True, text=True)
        line = "recipe change allowed at the resume from step 2 (steps 3 on): "
        line += "optim.lr 0.003 -> 0.001, optim.eps 1e-08 -> 1e-06"
        check(a.returncode == 0 and line in a.stdout,
              f"olmo audit reports the change from the ledger with its step: {a.stdout[-600:]}"
              f"{a.stderr[-300:]}")
        q = train(run, data, "optim.lr=1e-3", "optim.eps=1e-6", steps=4)
        check(q.returncode == 0, f"the next resume keeps the new recipe without a flag: "
              f"{q.stderr.strip()[-300:]}")
        q = train(run, data, steps=4)
        check(q.returncode != 0 and "optim.lr: 0.001 (checkpoint) -> 0.003" in q.stderr,
              f"... and refuses the old one: {q.stderr.strip()[-300:]}")
        sch = os.path.join(tmp, "schedule_alias")
        shutil.copytree(base, sch)
        q = train(sch, data, "trainer.max_steps=6", "trainer.allow_schedule_change=true")
        check(q.returncode == 0 and "trainer.max_steps 4 -> 6" in q.stdout + q.stderr,
              f"trainer.allow_schedule_change=true allows trainer.max_steps 4 -> 6: "
              f"{q.stderr.strip()[-300:]}")
        q = train(sch, data, "trainer.max_steps=8", "--allow-recipe-change", "batch")
        check(q.returncode != 0 and "'batch' names no recipe field" in q.stderr,
              f"an allow entry naming no recipe field is refused: {q.stderr.strip()[-200:]}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"recipe resume test: {time.time() - t_start:.1f} s, "
          f"{'all passed' if not FAILS else f'{len(FAILS)} FAILED'}", flush=True)
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
