"""The reference's noise floor (scripts/olmo_core_run.py --noise-floor): the same OLMo-core run, as
a second process alongside the reference, again from the reference's own start (DIR/init_hf) with
every initial weight nudged up by one ulp, in DIR/noise_twin; a stage (trainer.load_path = a
reference run's checkpoint) continues that reference's own twin instead (so the floor is the
chain's), or nudges the same checkpoint when the previous stage has no twin; DIR/noise_floor.json
then holds, per step, |twin - reference| of each close quantity (src/train/reference_run.h):
  train       loss, z_loss, grad_norm, grad_norm_f64
  validation  heldout.<set>, gap.<set>, model_entropy, marginal_entropy_bits
and a summary (largest difference per quantity). Exact quantities (instances, lr, skipped) must
agree between the two; a disagreement is an error (the twin would not be the same run).
Cost: a second OLMo-core run of the same length (in parallel: a second core).
`python scripts/noise_floor.py DIR` rewrites DIR/noise_floor.json from DIR and DIR/noise_twin.
"""
import json
import os
import subprocess
import sys

from olmo_core_common import RefError


def _records(run_dir):
    train, val = {}, {}
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            if r.get("kind") == "train":
                train[r["step"]] = r
    p = os.path.join(run_dir, "validation.jsonl")
    if os.path.exists(p):
        with open(p) as f:
            for line in f:
                r = json.loads(line)
                val[r["step"]] = r
    return train, val


def _diff(a, b):
    if a is None or b is None:
        return None
    return abs(float(a) - float(b))


def start_twin(args, run_dir, load_path=None):
    """Starts the twin (a second olmo_core_run.py process, output in DIR/noise_twin.log) once
    DIR/init_hf exists; load_path: the checkpoint this run started from (a stage), else None.
    Returns (process, chained)."""
    twin = os.path.join(run_dir, "noise_twin")
    cmd = [sys.executable, os.path.abspath(sys.argv[0]), args.config, *args.overrides]
    if load_path:
        # A stage: the twin continues the previous stage's twin (the floor of the whole chain);
        # without one it starts from the same checkpoint nudged by one ulp.
        prev_twin = os.path.join(os.path.dirname(load_path.rstrip("/")), "noise_twin")
        if os.path.isdir(prev_twin):
            cmd.append(f"trainer.load_path={prev_twin}")
        else:
            cmd.append("--nudge-ulp")
    else:
        cmd.append("--nudge-ulp")
    cmd += ["--run-dir", twin]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    # The reference's own start (ignored by a stage run, which loads the same checkpoint).
    cmd += ["--init-hf", os.path.join(run_dir, "init_hf")]
    chained = any(c.startswith("trainer.load_path=") and c.endswith("noise_twin") for c in cmd)
    with open(os.path.join(run_dir, "noise_twin.log"), "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    return proc, chained


def finish_twin(run_dir, proc, chained):
    """Waits for the twin, then writes DIR/noise_floor.json."""
    if proc.wait() != 0:
        with open(os.path.join(run_dir, "noise_twin.log")) as f:
            raise RefError(f"noise twin failed (exit {proc.returncode}):\n{f.read()[-4000:]}")
    write_floor(run_dir, chained)


def write_floor(run_dir, chained):
    """DIR/noise_floor.json from DIR's records and DIR/noise_twin's."""
    twin = os.path.join(run_dir, "noise_twin")
    ta, va = _records(run_dir)
    tb, vb = _records(twin)
    out = {"method": "OLMo-core vs itself, every initial weight nudged up by 1 ulp "
                     "(torch.nextafter), same data, threads and code"
                     + (" (this stage continues the previous stage's twin)" if chained else ""),
           "twin": "noise_twin", "train": {}, "validation": {}}
    for s, a in sorted(ta.items()):
        b = tb.get(s)
        if b is None:
            raise RefError(f"noise twin has no step {s}")
        for q in ("instances", "lr", "skipped"):
            if a.get(q) != b.get(q):
                raise RefError(f"noise twin differs in exact quantity {q} at step {s}: "
                               f"{a.get(q)} vs {b.get(q)}")
        for q in ("loss", "z_loss", "grad_norm", "grad_norm_f64"):
            out["train"].setdefault(q, {})[str(s)] = _diff(a.get(q), b.get(q))
    for s, a in sorted(va.items()):
        b = vb.get(s, {})
        for part in ("heldout", "gap"):
            for k, x in (a.get(part) or {}).items():
                out["validation"].setdefault(f"{part}.{k}", {})[str(s)] = \
                    _diff(x, (b.get(part) or {}).get(k))
        for q in ("model_entropy", "marginal_entropy_bits"):
            out["validation"].setdefault(q, {})[str(s)] = _diff(a.get(q), b.get(q))
    out["largest"] = {f"{part}.{q}": max((v for v in d.values() if v is not None), default=None)
                      for part in ("train", "validation") for q, d in out[part].items()}
    with open(os.path.join(run_dir, "noise_floor.json"), "w") as f:
        json.dump(out, f, indent=1)
    print("noise floor (largest |twin - reference|):",
          ", ".join(f"{k} {v:.3g}" for k, v in out["largest"].items() if v is not None))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: noise_floor.py REF_RUN_DIR (holding noise_twin/)")
    d = os.path.abspath(sys.argv[1])
    try:
        if not os.path.isfile(os.path.join(d, "noise_twin", "metrics.jsonl")):
            raise RefError(f"{d}/noise_twin/metrics.jsonl not found: "
                           "not a reference run with a twin")
        with open(os.path.join(d, "noise_twin", "reference.json")) as f:
            lp = json.load(f).get("load_path") or ""
        write_floor(d, "noise_twin" in lp)
    except RefError as e:
        sys.exit(f"noise_floor.py: {e}")
