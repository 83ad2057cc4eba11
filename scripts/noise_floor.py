"""The reference's noise floor (scripts/olmo_core_run.py --noise-floor): how far OLMo-core moves
from itself under perturbations that change its numerics but not the recipe. Two twins run as
processes alongside the reference, each the same OLMo-core run (same config, data, threads, code)
with one numerics-only change:
  noise_twin  every initial weight nudged up by one ulp (torch.nextafter) from the reference's
              own start (DIR/init_hf): the chaotic growth of a rounding difference;
  clip_twin   the same initial weights (DIR/init_hf), the clipping norm computed in float64 and
              rounded to fp32 (olmo_core_run.py --clip-f64) instead of torch's fp32
              get_total_norm (fp32 per-tensor norms, then a norm of the norms).
A third, held_twin (olmo_core_run.py --held-out-twin), is a sample of the same noise that does
NOT enter the floor:
  held_twin   the same initial weights each moved by one ulp, up or down by a seeded coin per
              element (--nudge-ulp-mixed): another realization of noise_twin's perturbation.
Compared as a run (`olmo compare REF/held_twin REF`) it must raise no alarm; a twin that built the
floor cannot fail that check (its distance is at most the floor, the bound 20x the floor).
Why the second: the precision of the clip norm is not part of the recipe. The recipe says "clip
to max_grad_norm"; how the norm's sum is rounded is an implementation choice, and OLMo-core's own
choice is not fixed: with data parallelism its norm is reduced through DTensor/FSDP in an order
that depends on the world size, so the same recipe on 1 or 8 ranks clips with norms that differ
in the last bits. When clipping acts at every early step (the demo recipe's lr 3e-2), that
~5e-6 relative difference of the clip coefficient moves every weight at step 1, while the 1-ulp
twin has not yet diverged; the floor must contain both.
A stage (trainer.load_path = a reference run's checkpoint) continues the previous stage's twin of
the same name (the floor of the whole chain), or applies the twin's change to the same
checkpoint when the previous stage has no such twin.

DIR/noise_floor.json:
  twins       {name: {"method", "train": {quantity: {step: |twin - reference|}}, "validation":
              {...}, "largest": {quantity: max}}} for each twin
  train, validation, param_rms   the floor: per quantity and step the largest of the twins'
              differences
  set_by      {"train.<q>" / "validation.<q>": {step: twin name}}: which twin set the floor
  method, largest     a description; the largest floor per quantity
Quantities: train loss, z_loss, grad_norm, grad_norm_f64; validation heldout.<set>, gap.<set>,
model_entropy, marginal_entropy_bits; param_rms weight.<group>, update.<group> (per parameter
group the weight RMS and the update RMS, src/monitor/param_rms.h) (src/monitor/reference_run.h reads
them). Exact quantities
(instances, lr, skipped) must agree between a twin and the reference; a disagreement is an error
(the twin would not be the same run).
Cost: two more OLMo-core runs of the same length, in parallel (two more cores); a third with
--held-out-twin.
`python scripts/noise_floor.py DIR` rewrites DIR/noise_floor.json from DIR and its twin dirs.
"""
import json
import os
import subprocess
import sys

from olmo_core_common import RefError

PARTS = ("train", "validation", "param_rms")  # the floor's parts (noise_floor.json keys)
# name -> (olmo_core_run.py flag, description)
TWINS = {
    "noise_twin": ("--nudge-ulp", "every initial weight nudged up by 1 ulp (torch.nextafter)"),
    "clip_twin": ("--clip-f64", "same initial weights, clipping norm in float64 "
                                "(torch's is fp32 per-tensor norms, then a norm of norms)"),
}
# Run like a twin, never part of the floor (write_floor reads TWINS only).
HELD_OUT = {
    "held_twin": ("--nudge-ulp-mixed", "every initial weight moved by 1 ulp, up or down by a "
                                       "seeded coin per element; held out of the floor"),
}
START_ONLY = ("--nudge-ulp", "--nudge-ulp-mixed")  # changes of the start, not of every step


def _records(run_dir):
    """(train, validation, param_rms): step -> record."""
    train, val, rms = {}, {}, {}
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            if r.get("kind") == "train":
                train[r["step"]] = r
            elif r.get("kind") == "param_rms":
                rms[r["step"]] = r
    p = os.path.join(run_dir, "validation.jsonl")
    if os.path.exists(p):
        with open(p) as f:
            for line in f:
                r = json.loads(line)
                val[r["step"]] = r
    return train, val, rms


def _diff(a, b):
    if a is None or b is None:
        return None
    return abs(float(a) - float(b))


def start_twins(args, run_dir, load_path=None):
    """Starts every twin (olmo_core_run.py processes, output in DIR/<name>.log) once DIR/init_hf
    exists, and the held-out twin with args.held_out_twin; load_path: the checkpoint this run
    started from (a stage), else None. Returns [(name, process)]."""
    out = []
    runs = {**TWINS, **(HELD_OUT if args.held_out_twin else {})}
    for name, (flag, _) in runs.items():
        cmd = [sys.executable, os.path.abspath(sys.argv[0]), args.config, *args.overrides]
        prev = os.path.join(os.path.dirname(load_path.rstrip("/")), name) if load_path else ""
        if prev and os.path.isdir(prev):
            cmd.append(f"trainer.load_path={prev}")  # the chain's twin
            if flag not in START_ONLY:
                cmd.append(flag)  # a property of every step, not of the start
        else:
            cmd.append(flag)
        cmd += ["--run-dir", os.path.join(run_dir, name)]
        if args.threads:
            cmd += ["--threads", str(args.threads)]
        # The reference's own start (ignored by a stage run, which loads a checkpoint).
        cmd += ["--init-hf", os.path.join(run_dir, "init_hf")]
        with open(os.path.join(run_dir, name + ".log"), "w") as log:
            out.append((name, subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)))
    return out


def finish_twins(run_dir, twins):
    """Waits for every twin, then writes DIR/noise_floor.json."""
    failed = []
    for name, proc in twins:
        if proc.wait() != 0:
            with open(os.path.join(run_dir, name + ".log")) as f:
                failed.append(f"{name} failed (exit {proc.returncode}):\n{f.read()[-3000:]}")
    if failed:
        raise RefError("noise twin " + "\n".join(failed))
    write_floor(run_dir)


def _twin_floor(run_dir, name, ta, va, ra):
    """{"method", "train", "validation", "largest"} of one twin against the reference records."""
    twin = os.path.join(run_dir, name)
    tb, vb, rb = _records(twin)
    with open(os.path.join(twin, "reference.json")) as f:
        load_path = (json.load(f).get("load_path") or "").rstrip("/")
    # A stage twin loaded <previous run>/<name>/stepN: it continues the previous stage's twin.
    chained = os.path.basename(os.path.dirname(load_path)) == name
    out = {"method": TWINS[name][1] + (" (continues the previous stage's twin)" if chained else ""),
           "train": {}, "validation": {}, "param_rms": {}}
    for s, a in sorted(ta.items()):
        b = tb.get(s)
        if b is None:
            raise RefError(f"{name} has no step {s}")
        for q in ("instances", "lr", "skipped"):
            if a.get(q) != b.get(q):
                raise RefError(f"{name} differs in exact quantity {q} at step {s}: "
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
    for s, a in sorted(ra.items()):
        b = rb.get(s)
        if b is None:
            raise RefError(f"{name} has no param_rms record at step {s}")
        for part in ("weight", "update"):
            for g, x in a[part].items():
                out["param_rms"].setdefault(f"{part}.{g}", {})[str(s)] = \
                    _diff(x, b[part].get(g))
    out["largest"] = _largest(out)
    return out


def _largest(d):
    return {f"{part}.{q}": max((v for v in steps.values() if v is not None), default=None)
            for part in PARTS for q, steps in d[part].items()}


def write_floor(run_dir):
    """DIR/noise_floor.json from DIR's records and those of the twin dirs present."""
    names = [n for n in TWINS if os.path.isfile(os.path.join(run_dir, n, "metrics.jsonl"))]
    if not names:
        raise RefError(f"{run_dir}: no twin run ({', '.join(TWINS)}) with metrics.jsonl")
    ta, va, ra = _records(run_dir)
    twins = {n: _twin_floor(run_dir, n, ta, va, ra) for n in names}
    out = {"method": "OLMo-core vs itself, same data, threads and code; per quantity and step the "
                     "largest difference of its twins: " + "; ".join(
                         f"{n}: {t['method']}" for n, t in twins.items()),
           "twins": twins, "train": {}, "validation": {}, "param_rms": {}, "set_by": {}}
    for part in PARTS:
        for n, t in twins.items():
            for q, steps in t[part].items():
                for s, v in steps.items():
                    cur = out[part].setdefault(q, {}).get(s)
                    if v is not None and (cur is None or v > cur):
                        out[part][q][s] = v
                        out["set_by"].setdefault(f"{part}.{q}", {})[s] = n
                    elif cur is None:
                        out[part][q][s] = None
    out["largest"] = _largest(out)
    with open(os.path.join(run_dir, "noise_floor.json"), "w") as f:
        json.dump(out, f, indent=1)
    for n, t in twins.items():
        print(f"noise floor, {n} (largest |twin - reference|):",
              ", ".join(f"{k} {v:.3g}" for k, v in t["largest"].items()
                        if v is not None and not k.startswith("param_rms.")))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: noise_floor.py REF_RUN_DIR (holding noise_twin/ and clip_twin/)")
    try:
        write_floor(os.path.abspath(sys.argv[1]))
    except RefError as e:
        sys.exit(f"noise_floor.py: {e}")
