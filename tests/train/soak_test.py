"""Soak (issue 37 item 7): one long `olmo train` of a reduced tiny model (tests/configs/tiny.yaml with
d_model 32, 2 layers -- one sliding-window, one full -- GQA 2:1, 2 micro-batches per step) for
20,000 steps with a checkpoint every 500 (trainer.keep_last 3), held-out eval and validation
every 500, the in-loop data audit on and a param_rms + train record every step, on
olmo_test/tiny_data.py token files (200 steps per epoch: ~100 epochs). While it runs, the
test samples the process every 0.25 s: VmRSS (/proc/PID/status), open descriptors
(/proc/PID/fd), the last step in metrics.jsonl, and the run directory (stepN dirs, bytes).

Windows: W = steps/20 (1,000 of 20,000). "At 1k" = the samples of steps [W, 2W) (after the
warm-up: first checkpoint, eval, validation, audit window, allocator arenas); "at 20k" = the
samples of steps [steps-W, steps]. Each figure is that window's median (max printed too).
Rules (state them here, change them only with a measurement in bench/results/soak.md):
  RSS flat:   median RSS at 20k <= median RSS at 1k + AUDIT_B_PER_STEP (48) x (steps - W)
              + 1 MiB. The 48 B/step are by design: the in-loop audit keeps one entry per step
              (src/audit/checks.h hashes_: content hash -> first step, the identical-batch check
              over the whole run; ~40 B per unordered_map node + bucket). Measured: +0.7 / +0.9
              MiB from 1k to 20k with the audit on (27.7-27.9 -> 28.6 MiB), +0.0 with
              audit.enabled=false (27.84 MiB flat from step 1,000 to 10,000). Allowed at 20k:
              +1.87 MiB; a leak of ~60 B/step more, or ~30 KiB per checkpoint, fails it.
  fds flat:   median fds at 20k <= median fds at 1k + 1, and max fds after 1k <= max fds at
              1k + 2 (measured: equal; one descriptor leaked per checkpoint adds ~38)
  retention:  at every sample at most keep_last + 1 stepN / stepN-tmp dirs (keep_last complete
              plus the one being written) holding at most (keep_last + 1) x the largest complete
              checkpoint; at the end exactly the keep_last newest save steps, <= keep_last x it
  linear logs: metrics.jsonl, tb/ and every other file outside the checkpoints grow linearly by
              design: bytes per step over the last window <= 1.25 x bytes per step over [W, 2W)
              + 4 B (measured ratio ~1.01: more digits in step numbers; the 4 B: records every
              500 steps land unevenly in a window), and each entry's average bytes per step over
              the run <= the same bound + 64 KiB / steps (no burst in between)
  the run:    exit 0, train records 1..steps each once, an eval and a validation record at
              every 500th step.
Usage: soak_test.py [--steps N] [--leak fd|mem] [--keep DIR] [--set KEY=VALUE ...].
--leak runs the binary under an LD_PRELOAD shim compiled here (cc): `fd` opens /dev/null and
never closes it on every rename() (the atomic publish of each checkpoint), `mem` mallocs,
touches and keeps 256 B per fflush() (metrics.jsonl's records and the console lines: ~7 per
step). Such a run is a negative control: it passes only when the check its leak must trip
fails ("fds flat" for fd, "RSS flat" for mem; the other checks are reported, not required);
ctest runs both at 10,000 steps (train_soak_leak_fd / _mem, label slow). Figures:
bench/results/soak.md; `--set trainer.keep_last=6` fails the retention checks.
Cost: 97 s on a quiet 2-core machine, 234-281 s at load 6-8 (ctest label `slow`: `make test-slow`).
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time

import olmo_test as ot
from olmo_test import check, finish
from olmo_test import tiny_data as td

INTERVAL = 500
KEEP = 3
AUDIT_B_PER_STEP = 48  # by-design growth of the audit's identical-batch map (see above)
MODEL = ["model.d_model=32", "model.n_layers=2", "model.n_heads=2", "model.n_kv_heads=1",
         "model.ffn_hidden=64", "model.window_pattern=[16,-1]", "data.micro_batch_tokens=256"]
STEP_DIR = re.compile(r"^step(\d+)(-tmp)?$")

LEAK_SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int rename(const char* a, const char* b) {
  static int (*real)(const char*, const char*);
  if (!real) real = (int (*)(const char*, const char*))dlsym(RTLD_NEXT, "rename");
#ifdef LEAK_FD
  (void)open("/dev/null", O_RDONLY);
#endif
  return real(a, b);
}
int fflush(FILE* f) {
  static int (*real)(FILE*);
  if (!real) real = (int (*)(FILE*))dlsym(RTLD_NEXT, "fflush");
#ifdef LEAK_MEM
  static void* volatile sink;  /* the pointer escapes: the compiler keeps the malloc */
  void* p = malloc(256);
  memset(p, 1, 256);
  sink = p;
#endif
  return real(f);
}
"""


def build_shim(tmp, kind):
    src, lib = os.path.join(tmp, "leak.c"), os.path.join(tmp, "leak.so")
    with open(src, "w") as f:
        f.write(LEAK_SHIM)
    flag = {"fd": "-DLEAK_FD", "mem": "-DLEAK_MEM"}[kind]
    subprocess.run(["cc", "-O1", "-shared", "-fPIC", flag, "-o", lib, src, "-ldl"], check=True)
    return lib


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def last_step(metrics):
    """Highest "step" in the last complete lines of metrics.jsonl (0 before the first)."""
    try:
        with open(metrics, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 8192))
            lines = f.read().split(b"\n")[1:-1]
    except FileNotFoundError:
        return 0
    steps = [int(m.group(1)) for ln in lines for m in [re.search(rb'"step":(\d+)', ln)] if m]
    return max(steps, default=0)


def dir_bytes(path):
    total = 0
    for root, _, files in os.walk(path):
        for fn in files:
            try:
                total += os.lstat(os.path.join(root, fn)).st_size
            except FileNotFoundError:
                pass  # removed by keep_last / renamed by the publish meanwhile
    return total


def run_dir_sample(run):
    """(step dirs {name: bytes}, {top-level file or dir: bytes} of everything else)."""
    ckpts, other = {}, {}
    try:
        names = os.listdir(run)
    except FileNotFoundError:
        return ckpts, other
    for name in names:
        p = os.path.join(run, name)
        if STEP_DIR.match(name):
            ckpts[name] = dir_bytes(p)
        else:
            try:
                other[name] = dir_bytes(p) if os.path.isdir(p) else os.lstat(p).st_size
            except FileNotFoundError:
                pass
    return ckpts, other


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "?"


def window(samples, lo, hi):
    return [s for s in samples if lo <= s["step"] < hi]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--leak", choices=["fd", "mem"])
    ap.add_argument("--keep", help="keep the run directory here")
    ap.add_argument("--set", action="append", default=[], help="one more KEY=VALUE override")
    a = ap.parse_args()
    steps, W = a.steps, a.steps // 20
    assert steps % INTERVAL == 0 and W >= INTERVAL, "--steps: a multiple of 500, >= 10000"
    tmp = tempfile.mkdtemp(prefix="olmo_soak_")
    try:
        d = td.make_data(os.path.join(tmp, "data"), train_tokens=64 * 8 * 200)
        run = a.keep or os.path.join(tmp, "run")
        shutil.rmtree(run, ignore_errors=True)
        args = [ot.bin_path(), "train", td.tiny_config(), *MODEL,
                f"data.mix={d['mix']}", f"eval.sets.val={d['val']}", f"trainer.run_dir={run}",
                f"trainer.max_steps={steps}", f"trainer.save_interval={INTERVAL}",
                f"trainer.keep_last={KEEP}", f"eval.interval={INTERVAL}",
                f"validation.interval={INTERVAL}", "audit.enabled=true", "trainer.threads=1",
                "trainer.param_rms_interval=1", "trainer.log_interval=1", *a.set]
        env = dict(os.environ)
        if a.leak:
            env["LD_PRELOAD"] = build_shim(tmp, a.leak)
            print(f"injected leak: {a.leak} (LD_PRELOAD {env['LD_PRELOAD']})")
        print("command:", " ".join(args))
        print(f"machine: {os.cpu_count()} CPUs, {cpu_model()}; load at start {load()}")
        log = open(os.path.join(tmp, "train.log"), "w")
        t0 = time.monotonic()
        p = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env)
        samples, metrics = [], os.path.join(run, "metrics.jsonl")
        while p.poll() is None:
            try:
                s = {"rss": rss_kib(p.pid), "fds": len(os.listdir(f"/proc/{p.pid}/fd"))}
            except (FileNotFoundError, ProcessLookupError, RuntimeError):
                break  # exited between poll() and the read
            s["step"] = last_step(metrics)
            s["ckpts"], s["other"] = run_dir_sample(run)
            s["t"] = time.monotonic() - t0
            samples.append(s)
            time.sleep(0.25)
        rc = p.wait()
        wall = time.monotonic() - t0
        log.close()
        with open(os.path.join(tmp, "train.log")) as f:
            tail = f.read()[-1500:]
        print(f"wall {wall:.0f} s for {steps} steps ({wall / steps * 1000:.1f} ms/step), "
              f"{len(samples)} samples; load at end {load()}")
        if not check(rc == 0, f"olmo train exit 0 (got {rc})"):
            print(tail)
            finish("train_soak")
        probs = ot.once_problems(run, steps, [(s, "val") for s in range(0, steps + 1, INTERVAL)])
        check(not probs, f"train records 1..{steps} once, eval at 0 and every {INTERVAL}: {probs}")
        vsteps = [r["step"] for r in ot.read_metrics(run, "validation")]
        check(vsteps == list(range(INTERVAL, steps + 1, INTERVAL)),
              f"validation every {INTERVAL} steps ({len(vsteps)} records)")
        audits = [r for r in ot.read_metrics(run, "info") if r.get("event") == "audit"]
        check(audits and audits[-1]["steps"] == steps and not audits[-1]["findings"],
              f"audit: {steps} steps audited, no findings ({audits[-1:] })")

        base, last = window(samples, W, 2 * W), window(samples, steps - W, steps + 1)
        after = [s for s in samples if s["step"] >= W]
        if not check(len(base) >= 3 and len(last) >= 3,
                     f"samples in [{W}, {2 * W}): {len(base)}, in [{steps - W}, {steps}]: "
                     f"{len(last)} (>= 3 each)"):
            finish("train_soak")

        def med(ss, k):
            return statistics.median(s[k] for s in ss)

        r1, r2 = med(base, "rss"), med(last, "rss")
        f1, f2 = med(base, "fds"), med(last, "fds")
        fmax1, fmax = max(s["fds"] for s in base), max(s["fds"] for s in after)
        print(f"RSS  at {W}: median {r1 / 1024:.1f} MiB (max {max(s['rss'] for s in base) / 1024:.1f}); "
              f"at {steps}: median {r2 / 1024:.1f} MiB (max {max(s['rss'] for s in last) / 1024:.1f}); "
              f"peak over the run {max(s['rss'] for s in samples) / 1024:.1f} MiB")
        print(f"fds  at {W}: median {f1:g} (max {fmax1}); at {steps}: median {f2:g} "
              f"(max {max(s['fds'] for s in last)}); max after {W}: {fmax}")
        print("RSS / fds by step (median of each tenth of the run): " + ", ".join(
            f"{lo}: {med(ss, 'rss') / 1024:.2f} MiB / {med(ss, 'fds'):g}"
            for lo in range(0, steps, steps // 10)
            for ss in [window(samples, lo, lo + steps // 10)] if ss))
        if a.keep:
            with open(os.path.join(a.keep, "soak_samples.json"), "w") as f:
                json.dump([{k: s[k] for k in ("t", "step", "rss", "fds")} for s in samples], f)
        allow = AUDIT_B_PER_STEP * (steps - W) / 1024 + 1024
        check(r2 <= r1 + allow, f"RSS flat: {r2 / 1024:.2f} MiB at {steps} <= {r1 / 1024:.2f} MiB "
              f"at {W} + {AUDIT_B_PER_STEP} B x {steps - W} steps (the audit's hashes) + 1 MiB "
              f"= {(r1 + allow) / 1024:.2f} MiB")
        check(f2 <= f1 + 1, f"fds flat: median {f2:g} at {steps} <= {f1:g} at {W} + 1")
        check(fmax <= fmax1 + 2, f"fds flat: max {fmax} after {W} <= max {fmax1} at {W} + 2")

        # Retention.
        ckpt_max = max((b for s in samples for n, b in s["ckpts"].items() if not n.endswith("-tmp")),
                       default=0)
        worst = max(samples, key=lambda s: (len(s["ckpts"]), sum(s["ckpts"].values())))
        check(len(worst["ckpts"]) <= KEEP + 1 and sum(worst["ckpts"].values()) <= (KEEP + 1) * ckpt_max,
              f"retention while running: at most {KEEP + 1} step dirs, <= {KEEP + 1} x {ckpt_max} B "
              f"(worst sample: {sorted(worst['ckpts'])}, {sum(worst['ckpts'].values())} B)")
        ckpts, other = run_dir_sample(run)
        want = [f"step{s}" for s in range(steps - (KEEP - 1) * INTERVAL, steps + 1, INTERVAL)]
        check(sorted(ckpts) == sorted(want) and sum(ckpts.values()) <= KEEP * ckpt_max,
              f"retention at the end: {sorted(ckpts)} == {want}, {sum(ckpts.values())} B "
              f"<= {KEEP} x {ckpt_max} B")

        # Linear logs: bytes per step of each non-checkpoint entry.
        def rate(ss, name):
            a0, a1 = ss[0], ss[-1]
            return (a1["other"].get(name, 0) - a0["other"].get(name, 0)) / max(1, a1["step"] - a0["step"])

        total = sum(other.values())
        print(f"run dir at the end: {(sum(ckpts.values()) + total) / 2**20:.1f} MiB: checkpoints "
              f"{sum(ckpts.values()) / 2**20:.1f} MiB ({len(ckpts)} x ~{ckpt_max / 2**20:.2f}), "
              + ", ".join(f"{n} {b / 2**20:.1f} MiB" for n, b in sorted(other.items())))
        for name in sorted(other):
            r_base, r_last = rate(base, name), rate(last, name)
            r_run = other[name] / steps
            print(f"  {name}: {r_base:.0f} B/step in [{W}, {2 * W}), {r_last:.0f} in the last "
                  f"window, {r_run:.0f} over the run")
            bound = 1.25 * r_base + 4  # +4 B/step: records every 500 steps land unevenly
            check(r_last <= bound and r_run <= bound + 64 * 1024 / steps,
                  f"{name} grows linearly: {r_last:.0f} / {r_run:.0f} B/step <= 1.25 x {r_base:.0f}")
        if a.leak:  # the negative control: the leak's own check must have failed
            want = {"fd": "fds flat", "mem": "RSS flat"}[a.leak]
            caught = [f for f in ot.FAILS if f.startswith(want)]
            others = [f for f in ot.FAILS if not f.startswith(want)]
            ot.FAILS.clear()
            print(f"negative control --leak {a.leak}: {len(caught)} '{want}' check(s) failed as "
                  f"they must; other checks failed: {others or 'none'}")
            check(caught, f"the injected {a.leak} leak is caught by the '{want}' check")
            finish(f"train_soak --leak {a.leak} (negative control)")
        finish("train_soak")
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
