#!/usr/bin/env python3
"""Draw two runs side by side (`olmo compare RUN_A RUN_B`): train loss per step (20-step running
mean) and held-out loss per set (validation records) of both runs; the first alarm raised during training
(step >= 1) as a vertical line. Prints the path of the PNG.

usage: compare_runs.py RUN_A RUN_B --out PNG
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(run):
    path = os.path.join(run, "metrics.jsonl")
    if not os.path.exists(path):
        sys.exit(f"compare_runs.py: {path}: no metrics file")
    train, held, alarms = {}, {}, []
    with open(path) as f:
        for line in f:
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue
            k = r.get("kind")
            if k == "train" and r.get("loss") is not None:
                train[r["step"]] = r["loss"]
            elif k == "validation":
                for s, v in (r.get("heldout") or {}).items():
                    if v is not None:
                        held.setdefault(s, {})[r["step"]] = v
            elif k == "alarm" and r.get("step", 0) >= 1:  # alarms during training
                alarms.append((r["step"], f"{r.get('source')}/{r.get('cause')}"))
    return train, held, alarms


def smooth(xs, n=20):
    out, acc = [], []
    for x in xs:
        acc.append(x)
        if len(acc) > n:
            acc.pop(0)
        out.append(sum(acc) / len(acc))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run_a")
    ap.add_argument("run_b")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    fig, ax = plt.subplots(figsize=(9, 5))
    for run, color in ((a.run_a, "tab:blue"), (a.run_b, "tab:red")):
        name = os.path.basename(os.path.normpath(run))
        train, held, alarms = load(run)
        steps = sorted(train)
        ax.plot(steps, smooth([train[s] for s in steps]), color=color, lw=2,
                label=f"{name}: train (20-step mean)")
        for i, (s, pts) in enumerate(sorted(held.items())):
            xs = sorted(pts)
            ax.plot(xs, [pts[x] for x in xs], color=color, ls="--" if i == 0 else ":",
                    marker="o", ms=4, label=f"{name}: held-out {s}")
        if alarms:
            step, cause = min(alarms)
            ax.axvline(step, color=color, lw=1, alpha=0.6)
            ax.annotate(f"{name}: first alarm, step {step} ({cause})", xy=(step, 0.02),
                        xycoords=("data", "axes fraction"), color=color, fontsize=8,
                        xytext=(4, 0), textcoords="offset points")
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats)")
    ax.set_title("train vs held-out loss")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)
    print(a.out)


if __name__ == "__main__":
    main()
