"""Shared helpers of the tests/distributed Python tests: launching `mpirun -np N build/olmo train`
on loopback, the tiny config with 12 micro-batches per step (every N in 1, 2, 3, 4 divides it),
and reading checkpoints (global tensors assembled from every rank's pieces with numpy, an
independent reader of our index format)."""
import json
import os
import subprocess
import time

import numpy as np

import olmo_test as ot
from olmo_test import tiny_data as td

MPIRUN = os.environ.get("OLMO_MPIRUN", "mpirun")


def base_overrides(data, run, steps=6, extra=()):
    # 12 instances of 64 tokens per step, 1 instance per micro-batch: 12 micro-batches.
    return [f"data.mix={data['mix']}", f"trainer.run_dir={run}", "data.global_batch_tokens=768",
            "data.micro_batch_tokens=64", f"trainer.max_steps={steps}", "trainer.threads=1",
            "dist.reduce=exact", *extra]


def train(np_, overrides, env=None, check=True, timeout=300):
    exe = ot.bin_path()
    cmd = [MPIRUN, "--oversubscribe", "--allow-run-as-root", "-np", str(np_), exe, "train",
           td.tiny_config(), *overrides]
    e = dict(os.environ)
    e.pop("OMP_NUM_THREADS", None)
    e.update(env or {})
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=timeout)
    p.t_end = time.time()
    p.seconds = p.t_end - t0
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


def steps(run):
    """step -> (loss, grad_norm, lr, batch_hash) from metrics.jsonl (bit-exact JSON doubles);
    AssertionError when a step is recorded twice (olmo_test.train_records)."""
    return ot.train_records(run)


def once_problems(run, n_steps, evals=()):
    """[] when every train step 1..n_steps and each (step, set) of evals is recorded exactly
    once (olmo_test.once_problems); else the problems."""
    return ot.once_problems(run, n_steps, evals)


def start_record(run):
    return [r for r in ot.read_metrics(run, "info") if r.get("event") == "start"][-1]


def tensors(step_dir):
    """name -> global float32 array assembled from all pieces of all ranks."""
    idx = json.load(open(os.path.join(step_dir, "index.json")))
    out, seen = {}, {}
    for t in idx["tensors"]:
        assert t["dtype"] == "f32", t
        g = out.setdefault(t["name"], np.full(t["global_shape"], np.nan, dtype=np.float32))
        with open(os.path.join(step_dir, t["file"]), "rb") as f:
            f.seek(t["byte_offset"])
            blk = np.frombuffer(f.read(t["nbytes"]), dtype="<f4").reshape(t["local_shape"])
        sl = tuple(slice(o, o + n) for o, n in zip(t["offset"], t["local_shape"]))
        g[sl] = blk
        seen[t["name"]] = seen.get(t["name"], 0) + blk.size
    for n, g in out.items():
        assert seen[n] == g.size, f"{step_dir}: tensor {n} not fully covered"
    return out


def final_dir(run):
    ds = [d for d in os.listdir(run) if d.startswith("step") and d[4:].isdigit()]
    return os.path.join(run, max(ds, key=lambda d: int(d[4:])))


def state(step_dir):
    return json.load(open(os.path.join(step_dir, "state.json")))


def max_rel_diff(a, b):
    """Largest |a-b| / rms(a) over the tensors of two checkpoints."""
    worst = 0.0
    for n in a:
        rms = float(np.sqrt(np.mean(a[n].astype(np.float64) ** 2))) or 1.0
        worst = max(worst, float(np.max(np.abs(a[n].astype(np.float64) - b[n]))) / rms)
    return worst


def bitwise_equal(a, b):
    return sorted(a) == sorted(b) and all(a[n].tobytes() == b[n].tobytes() for n in a)
