"""Shared helpers of the tests/train Python tests: synthetic OLMo-format token files for
configs/tiny.yaml (vocab 512, EOS 0, pad 1) and running build/olmo.

Token files are headerless little-endian uint32 (as OLMo-core / Dolma). The training stream is a
noisy affine recurrence t' = (5 t + 3) mod 512 with 10% random tokens and an EOS every 40-120
tokens, so a model can learn something in 20 steps; held-out files use the same process with
another seed.
"""
import os
import subprocess

import numpy as np

VOCAB, EOS = 512, 0


def stream(n, seed):
    rng = np.random.default_rng(seed)
    out = np.empty(n, dtype=np.uint32)
    t = 2
    next_eos = rng.integers(40, 120)
    for i in range(n):
        if i == next_eos:
            out[i] = EOS
            next_eos = i + 1 + rng.integers(40, 120)
            t = int(rng.integers(2, VOCAB))
            continue
        out[i] = t
        t = (5 * t + 3) % VOCAB
        if t < 2:
            t += 2
        if rng.random() < 0.1:
            t = int(rng.integers(2, VOCAB))
    return out


def make_data(root, train_tokens=64 * 8 * 30, seed=1):
    """Writes root/train/part-0.npy, root/train.mix, root/train2.mix (a second mix: another
    file), root/val/part-0.npy; returns a dict of paths."""
    os.makedirs(os.path.join(root, "train"), exist_ok=True)
    os.makedirs(os.path.join(root, "train2"), exist_ok=True)
    os.makedirs(os.path.join(root, "val"), exist_ok=True)
    stream(train_tokens, seed).tofile(os.path.join(root, "train", "part-0.npy"))
    stream(train_tokens, seed + 100).tofile(os.path.join(root, "train2", "part-0.npy"))
    stream(64 * 24, seed + 200).tofile(os.path.join(root, "val", "part-0.npy"))
    with open(os.path.join(root, "train.mix"), "w") as f:
        f.write("tiny,train/part-0.npy\n")
    with open(os.path.join(root, "train2.mix"), "w") as f:
        f.write("tiny2,train2/part-0.npy\n")
    return {"mix": os.path.join(root, "train.mix"), "mix2": os.path.join(root, "train2.mix"),
            "val": os.path.join(root, "val")}


def olmo(*args, check=True):
    """Runs build/olmo (OLMO_BIN) in a new process; returns CompletedProcess (text)."""
    exe = os.environ.get("OLMO_BIN", "build/olmo")
    p = subprocess.run([exe, *args], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"olmo {' '.join(args)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


def tiny_config():
    src = os.environ.get("OLMO_SOURCE_DIR", ".")
    return os.path.join(src, "configs", "tiny.yaml")


def read_metrics(run_dir, kind="train"):
    import json
    out = []
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            if r.get("kind") == kind:
                out.append(r)
    return out


def train_records(run_dir):
    """step -> (loss, grad_norm, lr, batch_hash) of metrics.jsonl's train records (bit-exact JSON
    doubles). A step recorded twice (a resume that re-ran a step without dropping its old
    record) raises AssertionError instead of collapsing into one entry."""
    out = {}
    for r in read_metrics(run_dir):
        if r["step"] in out:
            raise AssertionError(f"{run_dir}/metrics.jsonl: train step {r['step']} recorded twice")
        out[r["step"]] = (r["loss"], r["grad_norm"], r["lr"], r["batch_hash"])
    return out


def eval_records(run_dir):
    """(step, set) -> loss of metrics.jsonl's eval records; a pair recorded twice raises."""
    out = {}
    for r in read_metrics(run_dir, "eval"):
        k = (r["step"], r["set"])
        if k in out:
            raise AssertionError(f"{run_dir}/metrics.jsonl: eval {k} recorded twice")
        out[k] = r["loss"]
    return out


def once_problems(run_dir, steps, evals=()):
    """[] when metrics.jsonl holds every train step 1..steps exactly once and no other, and each
    (step, set) of `evals` exactly once and no other eval record; else what is wrong. Only rank 0
    writes metrics.jsonl: in a data-parallel job these are the job's records."""
    from collections import Counter
    probs = []
    ts = Counter(r["step"] for r in read_metrics(run_dir))
    twice = sorted(s for s, n in ts.items() if n > 1)
    if twice:
        probs.append(f"train steps recorded more than once: {twice}")
    if sorted(ts) != list(range(1, steps + 1)):
        probs.append(f"train steps {sorted(ts)}, want 1..{steps}")
    es = Counter((r["step"], r["set"]) for r in read_metrics(run_dir, "eval"))
    twice = sorted(k for k, n in es.items() if n > 1)
    if twice:
        probs.append(f"eval records more than once: {twice}")
    if sorted(es) != sorted(evals):
        probs.append(f"eval records {sorted(es)}, want {sorted(evals)}")
    return probs
