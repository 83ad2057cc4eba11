"""The tiny run's data of the Python tests (tests/train, tests/distributed, tests/model, ...):
synthetic OLMo-format token files for tests/configs/tiny.yaml (vocab 512, EOS 0, pad 1). Running
build/olmo and reading metrics.jsonl: olmo_test (olmo(), read_metrics(), train_records()).

Token files are headerless little-endian uint32 (as OLMo-core / Dolma). The training stream is a
noisy affine recurrence t' = (5 t + 3) mod 512 with 10% random tokens and an EOS every 40-120
tokens, so a model can learn something in 20 steps; held-out files use the same process with
another seed.
"""
import os

import numpy as np

from olmo_test import SRC

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


def tiny_config():
    return os.path.join(SRC, "tests", "configs", "tiny.yaml")
