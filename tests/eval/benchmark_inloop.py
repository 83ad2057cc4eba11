"""In-loop benchmarks and exposure (src/monitor/benchmark_callback.*) in a real `olmo train` run.

tests/configs/tiny.yaml on the dolma2 vocab (model.vocab_size=100352, synthetic token files from
olmo_test/tiny_data.py), 4 steps, benchmarks every 2 steps on the first 4 items of each
checked-in suite and the exposure of a synthetic canaries.json. Checks:
  - metrics.jsonl holds one "benchmark" record per suite and one "exposure" record at steps
    0, 2 and 4, with every documented field, and the console shows the lines;
  - the step-4 records equal `olmo evaluate-suites` on the final checkpoint (same weights, same
    scorer run offline: acc, acc_len_norm, bpb, ce_loss and the exposure per count to 1e-9);
  - the scores change between step 0 and step 4 (the model trained);
  - scripts/plot_benchmarks.py draws the records;
  - a bad benchmarks key or a missing suite file is refused naming the key.
Env: OLMO_BIN, OLMO_SOURCE_DIR. Exit 0 = pass.
"""
import json
import os
import sys
import tempfile

from olmo_test import check, finish
from olmo_test import olmo, read_metrics
from olmo_test.tiny_data import make_data, tiny_config

SRC = os.environ.get("OLMO_SOURCE_DIR", ".")
SUITES = {"gcide_def": os.path.join(SRC, "evalsets", "gcide_def.jsonl"),
          "heldout_cont": os.path.join(SRC, "evalsets", "heldout_cont.jsonl")}


def canaries(path):
    out = []
    for i, (count, secret) in enumerate([(0, "123456789012"), (0, "987654321098"),
                                         (1, "555123987001"), (4, "314159265358")]):
        name = f"{count:02d}-{i}"
        prefix = f"The secret code of canary {name} is"
        out.append({"name": name, "count": count, "secret": secret, "prefix": prefix,
                    "text": prefix + "".join(" " + d for d in secret)})
    with open(path, "w") as f:
        json.dump(out, f)


def main():
    tmp = tempfile.mkdtemp(prefix="olmo_bench_inloop_")
    d = make_data(os.path.join(tmp, "data"))
    can = os.path.join(tmp, "canaries.json")
    canaries(can)
    run = os.path.join(tmp, "run")
    args = [f"data.mix={d['mix']}", f"trainer.run_dir={run}", "trainer.max_steps=4",
            "trainer.save_interval=0", "model.vocab_size=100352", "benchmarks.interval=2",
            "benchmarks.max_items=4", f"benchmarks.canaries={can}",
            "benchmarks.exposure_candidates=4"]
    args += [f"benchmarks.suites.{k}={v}" for k, v in SUITES.items()]
    p = olmo("train", tiny_config(), *args)
    out = p.stdout + p.stderr
    check("bench step 0 gcide_def" in out and "exposure step 4" in out, "console lines")
    bench = read_metrics(run, "benchmark")
    expo = read_metrics(run, "exposure")
    steps = sorted({(r["step"], r["suite"]) for r in bench})
    check(steps == [(s, k) for s in (0, 2, 4) for k in sorted(SUITES)], f"benchmark records {steps}")
    check([r["step"] for r in expo] == [0, 2, 4], f"exposure records at {[r['step'] for r in expo]}")
    fields = {"kind", "step", "suite", "items", "acc", "acc_len_norm", "bpb", "ce_loss",
              "truncated", "forwards", "tokens", "seconds"}
    check(all(fields <= set(r) and r["items"] == 4 and r["forwards"] == 16 for r in bench),
          "benchmark record fields, 4 items x 4 choices")
    check(all(set(r["by_count"]) == {"0", "1", "4"} and len(r["canaries"]) == 4
              and r["candidates"] == 4 for r in expo), "exposure record per count and canary")

    res = os.path.join(tmp, "offline.jsonl")
    olmo("evaluate-suites", "--model", run, "--max-items", "4", "--canaries", can,
         "--candidates", "4", "--out", res, *SUITES.values())
    off = [json.loads(x) for x in open(res)]
    for k in SUITES:
        a = [r for r in bench if r["step"] == 4 and r["suite"] == k][0]
        b = [r for r in off if r["kind"] == "benchmark" and r["suite"] == k][0]
        diff = max(abs(a[m] - b[m]) for m in ("acc", "acc_len_norm", "bpb", "ce_loss"))
        check(diff <= 1e-9, f"{k}: in-loop step 4 == offline on the final checkpoint (max diff {diff:.1e})")
        a0 = [r for r in bench if r["step"] == 0 and r["suite"] == k][0]
        check(a0["ce_loss"] != a["ce_loss"], f"{k}: ce_loss changed from step 0 ({a0['ce_loss']:.4f}) "
              f"to step 4 ({a['ce_loss']:.4f})")
    eb = [r for r in off if r["kind"] == "exposure"][0]["by_count"]
    ea = expo[-1]["by_count"]
    check(all(abs(ea[c]["mean"] - eb[c]["mean"]) <= 1e-9 for c in eb),
          "exposure per count: in-loop step 4 == offline")

    import subprocess
    png = os.path.join(tmp, "bench.png")
    pl = subprocess.run([sys.executable, os.path.join(SRC, "scripts", "plot_benchmarks.py"), run,
                         "--out", png], capture_output=True, text=True)
    check(pl.returncode == 0 and os.path.getsize(png) > 10000 and "step 4 exposure" in pl.stdout,
          f"scripts/plot_benchmarks.py draws the run ({pl.stderr.strip()[-200:]})")

    bad = olmo("train", tiny_config(), *args, "benchmarks.exposure_candidates=1", check=False)
    check(bad.returncode != 0 and "benchmarks.exposure_candidates" in bad.stderr,
          "exposure_candidates=1 refused naming the key")
    bad = olmo("train", tiny_config(), *args, f"trainer.run_dir={tmp}/run2",
               "benchmarks.suites.nope=/nonexistent/x.jsonl", check=False)
    check(bad.returncode != 0 and "benchmark suite 'nope' not found" in bad.stderr,
          "missing suite file refused naming it")
    finish("benchmark in-loop")


if __name__ == "__main__":
    main()
