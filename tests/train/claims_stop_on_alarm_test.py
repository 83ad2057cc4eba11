"""README "Data-loader audit and validation checkpoints", Alarms: "a stop with
`audit.stop_on_alarm` / `validation.stop_on_alarm`", end to end (`olmo train`, one process,
tests/configs/tiny.yaml on olmo_test/tiny_data.py token files, 20 steps planned).

1. audit.stop_on_alarm=true with data.inject_fault=repeat_batch from step 5: the run ends at
   step 5 (train records 1..5 only, exit 0, `ALARM: stopping the run (audit.stop_on_alarm)`,
   `train: done at step 5`), the alarms of step 5 are in metrics.jsonl, and the final checkpoint
   is step5. Control: the same fault without the key runs all 20 steps (alarms logged).
2. validation.stop_on_alarm=true with the pool fault from step 1, the audit off and
   validation.reference = a clean run (validation every 5 steps): the run ends at the first
   validation record that alarms (step 5), naming validation.stop_on_alarm. Control: the
   same without the key runs 20 steps.
   validation.max_gap (docs/config.md: alarm when held-out - train loss exceeds it): the same
   pool fault with no reference and max_gap 0.1 raises gap_too_large at step 5 and, with
   validation.stop_on_alarm, stops there; without max_gap the run has no alarm.
3. A clean run with both keys on runs all 20 steps with no alarm (the stop is the alarm's).
Seen red: with `t.request_stop()` removed from raise_alarm (src/monitor/audit_callback.cpp),
parts 1 and 2 fail (the runs go on to step 20); with `if (v.max_gap > 0)` turned into
`< 0` in src/monitor/validation.cpp the max_gap check fails (no alarm).
Cost: eight tiny runs, ~4 s.
"""
import os
import shutil
import tempfile

import olmo_test as ot
from olmo_test import check, finish
from olmo_test import tiny_data as td

STEPS = 20


def last_step(run):
    return max((r["step"] for r in ot.read_metrics(run)), default=0)


def main():
    tmp = tempfile.mkdtemp(prefix="olmo_stop_on_alarm_")
    try:
        d = td.make_data(os.path.join(tmp, "data"), train_tokens=64 * 8 * 60)
        base = [td.tiny_config(), f"data.mix={d['mix']}", f"eval.sets.val={d['val']}",
                f"trainer.max_steps={STEPS}", "trainer.threads=1", "validation.interval=5"]

        def train(name, *extra):
            run = os.path.join(tmp, name)
            p = ot.olmo("train", *base, f"trainer.run_dir={run}", *extra, check=False)
            check(p.returncode == 0, f"{name}: exit 0 (got {p.returncode}) {p.stderr[-300:]}")
            return run, p.stdout + p.stderr

        fault = ["allow_fault_injection=true", "data.inject_fault=repeat_batch",
                 "data.fault_start_step=5", "data.fault_every=100"]
        run, out = train("audit_stop", *fault, "audit.stop_on_alarm=true")
        al = ot.read_metrics(run, "alarm")
        check(last_step(run) == 5, f"audit.stop_on_alarm: last train record is step 5 "
              f"(got {last_step(run)})")
        check(al and all(a["source"] == "audit" and a["step"] == 5 for a in al),
              f"audit alarms at step 5: {[(a['source'], a['cause'], a['step']) for a in al]}")
        check("ALARM: stopping the run (audit.stop_on_alarm)" in out, "console names the key")
        check("train: done at step 5" in out, "train: done at step 5")
        check(sorted(os.listdir(run)).count("step5") == 1 and
              not any(n.startswith("step") and n != "step5" for n in os.listdir(run)),
              f"the run's final checkpoint is step5: {sorted(os.listdir(run))}")
        run, out = train("audit_go_on", *fault)
        check(last_step(run) == STEPS and ot.read_metrics(run, "alarm"),
              f"control: without the key the faulty run alarms and goes on to step {STEPS} "
              f"(last {last_step(run)})")

        ref, _ = train("clean_ref")
        vfault = ["allow_fault_injection=true", "data.inject_fault=pool", "data.fault_start_step=1",
                  "audit.enabled=false", f"validation.reference={ref}"]
        run, out = train("val_stop", *vfault, "validation.stop_on_alarm=true")
        al = ot.read_metrics(run, "alarm")
        first = min((a["step"] for a in al), default=None)
        check(first == 5 and all(a["source"] == "validation" for a in al),
              f"validation alarms from step 5 only: {[(a['source'], a['cause'], a['step']) for a in al]}")
        check(last_step(run) == first, f"validation.stop_on_alarm: last train record is the first "
              f"alarm's step {first} (got {last_step(run)})")
        check("ALARM: stopping the run (validation.stop_on_alarm)" in out, "console names the key")
        run, out = train("val_go_on", *vfault)
        check(last_step(run) == STEPS and ot.read_metrics(run, "alarm"),
              f"control: without the key it alarms and goes on to step {STEPS} (last {last_step(run)})")

        gap = ["allow_fault_injection=true", "data.inject_fault=pool", "data.fault_start_step=1",
               "audit.enabled=false"]
        run, out = train("gap_stop", *gap, "validation.max_gap=0.1", "validation.stop_on_alarm=true")
        al = ot.read_metrics(run, "alarm")
        check(al and {a["cause"] for a in al} == {"gap_too_large"} and last_step(run) == al[0]["step"] == 5,
              f"validation.max_gap=0.1: gap_too_large at step 5 stops the run (alarms "
              f"{[(a['cause'], a['step']) for a in al]}, last step {last_step(run)})")
        run, out = train("gap_off", *gap)
        check(last_step(run) == STEPS and not ot.read_metrics(run, "alarm"),
              f"control: without max_gap the pool run has no alarm (last {last_step(run)})")

        run, out = train("clean_both", "audit.stop_on_alarm=true", "validation.stop_on_alarm=true",
                         f"validation.reference={ref}")
        check(last_step(run) == STEPS and not ot.read_metrics(run, "alarm") and "ALARM" not in out,
              f"a clean run with both keys runs {STEPS} steps without an alarm (last {last_step(run)})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish("claims_stop_on_alarm_test")


if __name__ == "__main__":
    main()
