"""MFU is never above 100% and throughput comes from wall time (issue 50), end to end through
`olmo train` (configs/tiny.yaml, 1 thread) with OLMO_TEST_PEAK (train/trainer_throughput.cpp):
the first peak probe reports 0.001 GFLOP/s, as a probe run on a busy machine would, and the run
trains real steps (trainer.peak_interval 0: no later probe), with evaluations and a checkpoint
between them.
  1. No train record, console line or summary has MFU above 100%; every train record's MFU is
     positive; the run's peak is raised to the achieved rate, and that is said once (one
     "peak raised to the achieved" console line, one {"event":"peak_raised"} record).
  2. A train record's tokens_per_s is its tokens over the difference of its "time" and the
     previous record's (the start record for the first step), within the millisecond the times
     are rounded to; its step_tokens_per_s is its tokens over step_s.
  3. A console line's tok/s is the tokens of the steps since the previous line over the
     difference of the two lines' records' times (lines every 2 steps).
  4. The summary record: tokens = the train records' sum; wall_tokens_per_s = tokens / (its time
     - the start record's time), evaluation and checkpoint included; train_tokens_per_s =
     tokens / the sum of step_s; the console prints it.
  5. Resume keeps the highest peak: the checkpoint's "peak" section holds the raised peak, and a
     resumed segment (the hook again reports 0.001) starts from it (start record peak_gflops).
Seen red before the fix: records with MFU 3e6% (the per-step figure against the probe's peak) and
tokens/s of the step alone (faster than the records' times allow across the evaluations).
Cost: ~10 s (two short tiny runs).
"""
import json
import os
import re

import olmo_test as ot
from olmo_test import check, finish
from olmo_test import tiny_data as td

MS = 0.001  # "time" is rounded to the millisecond: a difference of two is within 1 ms


def rate_ok(rate, tokens, dt, digits=1e-9):
    """rate = tokens / the true span, the span within MS of dt (both times rounded)."""
    lo, hi = tokens / (dt + MS), tokens / max(dt - MS, 1e-9)
    return lo * (1 - 1e-9) - digits <= rate <= hi * (1 + 1e-9) + digits


def console_lines(out):
    """step -> (tok/s, MFU%) of the plain log lines."""
    got = {}
    for m in re.finditer(r"^step (\d+)/\d+ .*\| (\d+) tok/s MFU ([0-9.]+)%", out, re.M):
        got[int(m.group(1))] = (float(m.group(2)), float(m.group(3)))
    return got


def segment(recs):
    """The records of the last segment: from the last start record on."""
    starts = [i for i, r in enumerate(recs) if r.get("event") == "start"]
    return recs[starts[-1]:]


def check_segment(what, out, recs, first_step, last_step):
    start = recs[0]
    train = [r for r in recs if r.get("kind") == "train"]
    check([r["step"] for r in train] == list(range(first_step, last_step + 1)),
          f"{what}: train records of steps {first_step}..{last_step}")
    over = [(r["step"], r["mfu"]) for r in train if not 0 < r["mfu"] <= 100.0]
    check(not over, f"{what}: every train record's MFU in (0, 100]: {over}")
    prev, bad, bad_step = start, [], []
    for r in train:
        dt = r["time"] - prev["time"]
        if not (rate_ok(r["tokens_per_s"], r["tokens"], dt) and abs(r["span_s"] - dt) <= MS + 1e-9):
            bad.append((r["step"], r["tokens_per_s"], r["tokens"], dt))
        if abs(r["step_tokens_per_s"] - r["tokens"] / r["step_s"]) > 1e-9 * r["step_tokens_per_s"]:
            bad_step.append(r["step"])
        prev = r
    check(not bad, f"{what}: tokens_per_s = tokens / the records' time difference: {bad}")
    check(not bad_step, f"{what}: step_tokens_per_s = tokens / step_s: {bad_step}")
    lines = console_lines(out)
    by_step = {r["step"]: r for r in train}
    want_lines = sorted({first_step, last_step} | {s for s in by_step if s % 2 == 0 or s == 1})
    check(sorted(lines) == want_lines, f"{what}: console lines at steps {sorted(lines)}, want "
          f"{want_lines}")
    prev_t, prev_s, bad = start["time"], first_step - 1, []
    for s in sorted(lines):
        tps, mfu = lines[s]
        tokens = sum(by_step[k]["tokens"] for k in range(prev_s + 1, s + 1))
        if not (rate_ok(tps, tokens, by_step[s]["time"] - prev_t, digits=0.5) and 0 < mfu <= 100):
            bad.append((s, tps, mfu, tokens, by_step[s]["time"] - prev_t))
        prev_t, prev_s = by_step[s]["time"], s
    check(not bad, f"{what}: console tok/s over the wall time since the previous line, MFU <= "
          f"100%: {bad}")
    summ = [r for r in recs if r.get("event") == "summary"]
    if not check(len(summ) == 1, f"{what}: one summary record ({len(summ)})"):
        return None
    sm = summ[0]
    tokens = sum(r["tokens"] for r in train)
    train_s = sum(r["step_s"] for r in train)
    check(sm["tokens"] == tokens and sm["steps"] == len(train) and sm["first_step"] == first_step,
          f"{what}: summary tokens {sm['tokens']} / steps {sm['steps']} = the records' {tokens} / "
          f"{len(train)}")
    check(rate_ok(sm["wall_tokens_per_s"], tokens, sm["time"] - start["time"]),
          f"{what}: summary wall_tokens_per_s {sm['wall_tokens_per_s']} = {tokens} tokens / "
          f"({sm['time']} - {start['time']}) s")
    check(abs(sm["train_tokens_per_s"] - tokens / train_s) <= 1e-6 * sm["train_tokens_per_s"],
          f"{what}: summary train_tokens_per_s {sm['train_tokens_per_s']} = {tokens} / {train_s}")
    check(sm["train_tokens_per_s"] > sm["wall_tokens_per_s"] and
          0 < sm["wall_mfu"] < sm["train_mfu"] <= 100.0,
          f"{what}: training-only figure above the wall-clock one, both MFU <= 100: {sm}")
    check(re.search(r"^summary: steps \d+-\d+, .* tokens: wall clock .* tokens/s, MFU [0-9.]+% "
                    r"\(evaluation, checkpoints and redos included\); training steps alone", out,
                    re.M) is not None, f"{what}: the summary line printed")
    return sm


def main():
    with ot.tmp_dir("mfu_wall") as tmp:
        data = td.make_data(os.path.join(tmp, "data"))
        run = os.path.join(tmp, "run")
        base = [td.tiny_config(), f"data.mix={data['mix']}", f"eval.sets.val={data['val']}",
                "eval.interval=3", "eval.at_start=true", f"trainer.run_dir={run}",
                "trainer.max_steps=8", "trainer.threads=1", "trainer.progress=off",
                "trainer.peak_interval=0", "trainer.log_interval=2", "trainer.save_interval=3"]
        env = dict(os.environ, OLMO_TEST_PEAK="0.001")
        p = ot.olmo("train", *base, "trainer.hard_stop_steps=5", env=env)
        out = p.stdout + p.stderr
        recs = ot.read_metrics(run, None)
        start = recs[0]
        check(start.get("event") == "start" and start["peak_fp32_gflops"] == 0.001,
              f"the hook's low first probe: start peak {start.get('peak_fp32_gflops')}")
        raises = [r for r in recs if r.get("event") == "peak_raised"]
        check(len(raises) == 1 and out.count("peak raised to the achieved") == 1,
              f"the raise said once: {len(raises)} records, "
              f"{out.count('peak raised to the achieved')} console lines")
        check(re.search(r"peaks fp32 \d+ \(theoretical (unknown|\d+ GFLOP/s = \d+ cores? x \d+ "
                        r"flop/cycle x \d+ MHz)", out) is not None,
              "the theoretical FMA peak (or why not) printed beside the measured one")
        sm = check_segment("segment 1", out, recs, 1, 5)
        last_peak = [r for r in recs if r.get("kind") == "train"][-1]["peak_gflops"]
        with open(os.path.join(run, "step5", "state.json")) as f:
            saved = json.load(f).get("peak", {})
        check(saved.get("fp32_gflops") is not None and
              saved["fp32_gflops"] >= last_peak > 0.001 and
              (sm is None or saved["fp32_gflops"] >= sm["peak_gflops"]),
              f"the checkpoint keeps the raised peak: {saved} (last record's {last_peak})")
        # 5. Resume: the hook's low probe again; the checkpoint's peak is the floor.
        p = ot.olmo("train", *base, env=env)
        out2 = p.stdout + p.stderr
        seg = segment(ot.read_metrics(run, None))
        check(seg[0]["step"] == 5 and seg[0]["peak_fp32_gflops"] == saved.get("fp32_gflops"),
              f"the resumed segment starts from the checkpoint's peak: "
              f"{seg[0].get('peak_fp32_gflops')} (saved {saved.get('fp32_gflops')})")
        check_segment("segment 2 (resumed)", out2, seg, 6, 8)
    finish("mfu_wall_test")


if __name__ == "__main__":
    main()
