#!/usr/bin/env python3
"""Plot the in-loop benchmark scores and canary exposure of a run (RUN_DIR/metrics.jsonl records
of kind "benchmark" and "exposure", written by src/monitor/benchmark_callback.cpp, and "downstream",
OLMo 3's own tasks, written by src/monitor/olmo_benchmark_callback.cpp) to a PNG.

usage: plot_benchmarks.py RUN_DIR [--out RUN_DIR/benchmarks.png]
Left: acc and acc_len_norm per suite over steps (chance = 1/choices dotted). Middle: bits per
byte of the gold continuation per suite. Right: mean exposure per repetition count over steps
(count 0 = the never-inserted controls; log2 |R| dashed = full memorisation). With downstream
records, a fourth panel: the BPB v2 of each OLMo 3 bpb task over steps; the other tasks'
reported metric (accuracy, length-normalized accuracy: the record's "primary") joins the left
panel. If a step appears twice (a resumed run), the last record wins. Prints the path of the
PNG and a table of the last step's figures (downstream: first -> last step).
"""
import argparse
import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def primary(r):
    """The name of the metric OLMo-core reports for a downstream record's task (records written
    before "primary" existed: BPB v2 if present, else accuracy)."""
    bpb = f"eval/downstream/{r['task']} (BPB v2)"
    return r.get("primary") or (bpb if bpb in r else f"eval/downstream/{r['task']} (accuracy)")


def fmt(v):
    return "n/a" if v is None else f"{v:.4f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dir")
    ap.add_argument("--out", default=None)
    ap.add_argument("--choices", type=int, default=4, help="choices per item (chance line)")
    a = ap.parse_args()
    path = os.path.join(a.run_dir, "metrics.jsonl")
    if not os.path.exists(path):
        sys.exit(f"plot_benchmarks.py: {path}: no metrics file")
    bench, expo, down = {}, {}, {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                sys.exit(f"plot_benchmarks.py: {path}:{n}: not valid JSON")
            if r.get("kind") == "benchmark":
                bench.setdefault(r["suite"], {})[r["step"]] = r
            elif r.get("kind") == "exposure":
                expo[r["step"]] = r
            elif r.get("kind") == "downstream":
                down.setdefault(r["task"], {})[r["step"]] = r
    if not bench and not expo and not down:
        sys.exit(f"plot_benchmarks.py: {path}: no benchmark, exposure or downstream records "
                 "(is the config's benchmarks: section set?)")
    fig, ax = plt.subplots(1, 4 if down else 3, figsize=(20 if down else 15, 4.2))
    for suite, rs in sorted(bench.items()):
        steps = sorted(rs)
        l, = ax[0].plot(steps, [rs[s]["acc"] for s in steps], "o-", label=f"{suite} acc")
        ax[0].plot(steps, [rs[s]["acc_len_norm"] for s in steps], "s--", color=l.get_color(),
                   label=f"{suite} acc_len_norm")
        ax[1].plot(steps, [rs[s]["bpb"] for s in steps], "o-", label=suite)
    for task, rs in sorted(down.items()):
        steps = sorted(rs)
        name = primary(rs[steps[-1]])
        is_bpb = name.endswith("(BPB v2)") or name.endswith("(CE loss v2)")
        ax[3 if is_bpb else 0].plot(steps, [rs[s].get(name) for s in steps], "^-",
                                    label=name.replace("eval/downstream/", ""))
    if down:
        ax[3].set(title="OLMo 3 downstream tasks (BPB v2)",
                  xlabel="step")
        ax[3].legend(fontsize=7)
        ax[3].grid(alpha=0.3)
    ax[0].axhline(1 / a.choices, ls=":", color="gray", label="chance")
    ax[0].set(title="ranked classification accuracy", xlabel="step", ylim=(0, 1))
    ax[1].set(title="bits per byte (gold continuation)", xlabel="step")
    for x in ax[:2]:
        x.legend(fontsize=7)
        x.grid(alpha=0.3)
    if expo:
        steps = sorted(expo)
        counts = sorted({int(c) for r in expo.values() for c in r["by_count"]})
        for c in counts:
            ys = [expo[s]["by_count"].get(str(c), {}).get("mean") for s in steps]
            ax[2].plot(steps, ys, "o-", label=f"x{c}" + (" (controls)" if c == 0 else ""))
        cand = expo[steps[-1]]["candidates"]
        ax[2].axhline(math.log2(cand), ls="--", color="gray",
                      label=f"log2 |R| = log2 {cand}")
        ax[2].set(title="canary exposure (bits) by repetition count", xlabel="step")
        ax[2].legend(fontsize=7)
        ax[2].grid(alpha=0.3)
    fig.suptitle(os.path.basename(os.path.normpath(a.run_dir)))
    fig.tight_layout()
    out = a.out or os.path.join(a.run_dir, "benchmarks.png")
    fig.savefig(out, dpi=110)
    for suite, rs in sorted(bench.items()):
        s = max(rs)
        r = rs[s]
        print(f"step {s} {suite:14s} acc {r['acc']:.3f} acc_len_norm {r['acc_len_norm']:.3f} "
              f"bpb {r['bpb']:.3f} ({r['items']} items)")
    for task, rs in sorted(down.items()):
        first, last = min(rs), max(rs)
        name = primary(rs[last])
        print(f"step {first} -> {last} {name.replace('eval/downstream/', ''):58s} "
              f"{fmt(rs[first].get(name))} -> {fmt(rs[last].get(name))} ({rs[last]['docs']} docs)")
    if expo:
        s = max(expo)
        line = " ".join(f"x{c}: {v['mean']:.2f}" for c, v in
                        sorted(expo[s]["by_count"].items(), key=lambda kv: int(kv[0])))
        print(f"step {s} exposure (bits, |R| = {expo[s]['candidates']}): {line}")
    print(out)


if __name__ == "__main__":
    main()
