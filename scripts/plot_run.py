#!/usr/bin/env python3
"""Draw the train and held-out loss curves of a run dir (RUN_DIR/metrics.jsonl) to a PNG.

usage: plot_run.py RUN_DIR [--out RUN_DIR/loss.png]
Train loss per step (thin) with a 20-step running mean (thick); held-out loss per set as
markers at the steps it was evaluated (kind "eval"), and the validation checkpoints' held-out loss
per set (kind "validation": every validation.interval steps, fewer documents) as a dashed line
with small markers. If a step appears twice (a resumed run), the last record
wins. Prints the path of the PNG.
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dir")
    ap.add_argument("--out", default=None)
    ap.add_argument("--write-to", default=None,
                    help="draw into this file instead of --out (olmo plot: the temporary it "
                         "publishes under --out once this script succeeds)")
    a = ap.parse_args()
    path = os.path.join(a.run_dir, "metrics.jsonl")
    if not os.path.exists(path):
        sys.exit(f"plot_run.py: {path}: no metrics file")
    train, evals, vals = {}, {}, {}
    with open(path) as f:
        for line in f:
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue
            if r.get("kind") == "train" and r.get("loss") is not None:
                train[r["step"]] = r["loss"]
            elif r.get("kind") == "eval" and r.get("loss") is not None:
                evals.setdefault(r["set"], {})[r["step"]] = r["loss"]
            elif r.get("kind") == "validation":
                for name, loss in (r.get("heldout") or {}).items():
                    if loss is not None:
                        vals.setdefault(name, {})[r["step"]] = loss
    if not train and not evals and not vals:
        sys.exit(f"plot_run.py: {path}: no train, eval or validation records")
    fig, ax = plt.subplots(figsize=(8, 5))
    if train:
        steps = sorted(train)
        loss = [train[s] for s in steps]
        ax.plot(steps, loss, lw=0.6, alpha=0.4, color="C0", label="train (per step)")
        k = 20
        if len(loss) >= k:
            run = [sum(loss[i - k + 1:i + 1]) / k for i in range(k - 1, len(loss))]
            ax.plot(steps[k - 1:], run, lw=2, color="C0", label=f"train ({k}-step mean)")
    for i, (name, d) in enumerate(sorted(evals.items())):
        s = sorted(d)
        ax.plot(s, [d[x] for x in s], marker="o", lw=1.5, color=f"C{i + 1}",
                label=f"held-out {name}")
    for i, (name, d) in enumerate(sorted(vals.items())):
        s = sorted(d)
        color = f"C{len(evals) + i + 1}" if name not in evals else \
            f"C{sorted(evals).index(name) + 1}"
        ax.plot(s, [d[x] for x in s], marker=".", ms=5, ls="--", lw=1, color=color,
                label=f"validation {name} ({len(s)} checkpoints)")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats/token)")
    ax.set_title(f"olmo.cpp run {os.path.basename(os.path.abspath(a.run_dir))}")
    ax.grid(alpha=0.3)
    ax.legend()
    out = a.out or os.path.join(a.run_dir, "loss.png")
    fig.tight_layout()
    fig.savefig(a.write_to or out, dpi=120, format="png")
    print(out)


if __name__ == "__main__":
    main()
