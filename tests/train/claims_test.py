"""README "Failure behaviour" claims on non-finite steps, end to end (`olmo train`, one process):

1. "NaN / Inf in ... the z-loss": OLMO_TEST_NAN=zloss:3 / zloss_inf:3 puts NaN / Inf into the
   z-loss sum of step 3 only (its CE stays finite), under dist.reduce fast and exact: step 3 is
   logged skipped with a `nonfinite` record naming the loss, and the step-3 checkpoint holds
   the weights, moments, AdamW counts and skip window of step 2 bit for bit, while a clean run's
   step 3 differs from its step 2 (so the comparison can fail).
2. "trainer.max_nonfinite_steps (default 10)": with no override, a loss that is NaN from step 2
   on stops the run after step 11 (10 in a row) with the error naming the streak and the key's
   value 10; 9 in a row (steps 2-10) do not stop it.
"""
import os
import shutil
import subprocess
import tempfile

import numpy as np

import dist_util as du
import olmo_test as ot
from olmo_test import check, finish
from olmo_test import tiny_data as td


def run(args, nan=None):
    env = dict(os.environ)
    env.pop("OLMO_TEST_NAN", None)
    if nan:
        env["OLMO_TEST_NAN"] = nan
    return subprocess.run([ot.bin_path(), "train", td.tiny_config(),
                           *args], capture_output=True, text=True, env=env)


def nonfinite(run_dir):
    return [r for r in ot.read_metrics(run_dir, "info") if r.get("event") == "nonfinite"]


def zloss_cases(tmp, base):
    for kind in ("zloss", "zloss_inf"):
        for reduce in ("fast", "exact"):
            what = f"{kind}, dist.reduce={reduce}"
            rd = os.path.join(tmp, f"{kind}_{reduce}")
            p = run([*base, f"trainer.run_dir={rd}", f"dist.reduce={reduce}",
                     "trainer.max_steps=6", "trainer.save_interval=1",
                     "trainer.hard_stop_steps=3"], nan=f"{kind}:3")
            if not check(p.returncode == 0, f"{what}: rc {p.returncode} " + (p.stderr[-300:] if p.returncode else "")):
                continue
            tr = {r["step"]: r for r in ot.read_metrics(rd)}
            nf = nonfinite(rd)
            check(tr[3]["skipped"] and not tr[2]["skipped"], f"{what}: step 3 skipped, 2 not")
            check(len(nf) == 1 and nf[0]["step"] == 3 and nf[0]["what"] == "loss",
                  f"{what}: one nonfinite record naming the loss: {nf}")
            check(tr[3]["z_loss"] is None, f"{what}: z-loss logged as {tr[3]['z_loss']}")
            if reduce == "fast":  # the CE part itself stayed finite: only the z-loss was bad
                check(tr[3]["loss"] is not None and np.isfinite(tr[3]["loss"]),
                      f"{what}: the CE loss of step 3 is finite ({tr[3]['loss']})")
            a, b = du.tensors(os.path.join(rd, "step2")), du.tensors(os.path.join(rd, "step3"))
            check(du.bitwise_equal(a, b), f"{what}: step3 checkpoint == step2 bitwise")
    # Control: without the fault step 3 moves the weights.
    rd = os.path.join(tmp, "clean")
    p = run([*base, f"trainer.run_dir={rd}", "trainer.max_steps=3", "trainer.save_interval=1"])
    check(p.returncode == 0 and not du.bitwise_equal(du.tensors(os.path.join(rd, "step2")),
                                                     du.tensors(os.path.join(rd, "step3"))),
          "control: a clean step 3 changes the checkpoint")


def default_streak(tmp, base):
    rd = os.path.join(tmp, "streak10")
    p = run([*base, f"trainer.run_dir={rd}", "trainer.max_steps=20"], nan="loss:2:30")
    tr = {r["step"]: r for r in ot.read_metrics(rd)}
    check(p.returncode != 0 and max(tr) == 11,
          f"default: NaN from step 2 stops the run after step 11 (rc {p.returncode}, last "
          f"step {max(tr) if tr else None})")
    check("for 10 consecutive steps (2..11" in p.stderr and
          "trainer.max_nonfinite_steps = 10" in p.stderr, f"error names the streak and the "
          f"default 10: {p.stderr.strip()[-300:]}")
    nf = nonfinite(rd)
    check(len(nf) == 10 and all(r["max_nonfinite_steps"] == 10 for r in nf),
          f"10 nonfinite records carrying max_nonfinite_steps 10 ({len(nf)})")
    rd = os.path.join(tmp, "streak9")
    p = run([*base, f"trainer.run_dir={rd}", "trainer.max_steps=12"], nan="loss:2:9")
    tr = {r["step"]: r for r in ot.read_metrics(rd)}
    check(p.returncode == 0 and max(tr) == 12 and not tr[11]["skipped"],
          f"9 in a row (steps 2-10) do not stop the run: rc {p.returncode} " + (p.stderr[-200:] if p.returncode else ""))


def main():
    tmp = tempfile.mkdtemp(prefix="olmo_claims_")
    try:
        d = td.make_data(tmp)
        base = [f"data.mix={d['mix']}", "validation.interval=0", "trainer.keep_last=10",
                "trainer.threads=1", "allow_fault_injection=true"]
        zloss_cases(tmp, base)
        default_streak(tmp, base)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish("claims_test")


if __name__ == "__main__":
    main()
