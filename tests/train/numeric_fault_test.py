"""Numeric faults never reach the weights, the moments or a checkpoint (issue 11, item 4).

Test switch OLMO_TEST_NAN=KIND:STEP[:COUNT[:RANK]] (src/train/trainer.h), refused unless the
config says allow_fault_injection: true.

1. Refusal: OLMO_TEST_NAN without allow_fault_injection is an error and touches no run dir.
2. One process, a NaN / Inf in the loss or in one gradient element at step 3 (also with
   clipping off, where no norm is computed): step 3 is logged as skipped and non-finite
   (metrics.jsonl train record `skipped: true`, an info `nonfinite` record, a console line), and
   the checkpoint written at step 3 (hard stop) holds exactly the weights, both AdamW moments,
   the AdamW step counts and the skip-step window of step 2, bit for bit; every tensor of every
   checkpoint is finite; resumed, the run trains on (steps 4-6 finite, not skipped).
3. A loss that stays NaN from step 5 with trainer.max_nonfinite_steps=3: the run stops at step 7
   with an error naming the streak and the newest complete checkpoint (step4: the step-6
   checkpoint fell due inside the streak and was not written); step4 verifies and a restart
   without the fault resumes from it and finishes.
4. A NaN in a weight (kind `weight`) at a save step: the checkpoint writer refuses it with an
   error naming the tensor; no step4 / step4-tmp; step2 stays the newest complete one.
5. Two processes (mpirun; dist.reduce exact and fast): the fault on rank 1 only (a gradient
   element, the loss) makes BOTH ranks skip the step: the step-3 checkpoint (every rank's
   moment pieces) equals step 2's bit for bit.
"""
import json
import os
import shutil
import tempfile

import numpy as np

import dist_util as du
import olmo_test as ot
from olmo_test import check, finish
from olmo_test import tiny_data as td


def run(args, env=None):
    exe = ot.bin_path()
    import subprocess
    e = dict(os.environ)
    e.pop("OLMO_TEST_NAN", None)
    e.update(env or {})
    return subprocess.run([exe, "train", td.tiny_config(), *args], capture_output=True,
                          text=True, env=e)


def all_info(run_dir, event):
    return [r for r in ot.read_metrics(run_dir, "info") if r.get("event") == event]


def state(d):
    return json.load(open(os.path.join(d, "state.json")))


def complete(run_dir):
    return sorted(int(x[4:]) for x in os.listdir(run_dir) if x.startswith("step") and
                  x[4:].isdigit() and os.path.exists(os.path.join(run_dir, x, "COMMITTED")))


def same_state(a, b, what):
    """Weights, moments (all pieces), AdamW step counts and skip window of two checkpoints."""
    ta, tb = du.tensors(a), du.tensors(b)
    check(du.bitwise_equal(ta, tb), f"{what}: tensors of {os.path.basename(b)} differ from "
          f"{os.path.basename(a)}")
    check(all(np.isfinite(t).all() for t in tb.values()), f"{what}: non-finite tensor in {b}")
    sa, sb = state(a), state(b)
    check(sa["optim"] == sb["optim"], f"{what}: AdamW step counts / groups differ")
    check(sa["skip_step"] == sb["skip_step"], f"{what}: skip-step window differs")
    check(sb["trainer"]["step"] == sa["trainer"]["step"] + 1, f"{what}: trainer step")


def main():
    skipped = False
    tmp = tempfile.mkdtemp(prefix="olmo_nan_")
    try:
        d = td.make_data(tmp)
        base = [f"data.mix={d['mix']}", "validation.interval=0", "trainer.keep_last=10",
                "trainer.threads=1"]
        allow = ["allow_fault_injection=true"]

        # 1. refused without allow_fault_injection
        r0 = os.path.join(tmp, "refused")
        p = run([*base, f"trainer.run_dir={r0}", "trainer.max_steps=3"],
                env={"OLMO_TEST_NAN": "loss:2"})
        check(p.returncode == 1 and "allow_fault_injection" in p.stderr and
              not os.path.exists(r0), f"refusal: rc {p.returncode} {p.stderr[-300:]}")
        print("refused:", p.stderr.strip()[:160])

        # 2. one process, each kind at step 3
        for kind, extra in (("loss", []), ("loss_inf", []), ("grad", []), ("grad_inf", []),
                            ("grad", ["optim.max_grad_norm=0"])):
            what = kind + (" (no clipping)" if extra else "")
            rd = os.path.join(tmp, kind + ("_noclip" if extra else ""))
            ov = [*base, *allow, *extra, f"trainer.run_dir={rd}", "trainer.max_steps=6",
                  "trainer.save_interval=1"]
            p = run([*ov, "trainer.hard_stop_steps=3"], env={"OLMO_TEST_NAN": f"{kind}:3"})
            if not check(p.returncode == 0, f"{what}: rc {p.returncode} {p.stderr[-400:]}"):
                continue
            tr = {r["step"]: r for r in ot.read_metrics(rd)}
            nf = all_info(rd, "nonfinite")
            check(tr[3]["skipped"] and not tr[2]["skipped"], f"{what}: step 3 not skipped")
            want = "loss" if kind.startswith("loss") else "gradient"
            check(len(nf) == 1 and nf[0]["step"] == 3 and nf[0]["what"] == want,
                  f"{what}: nonfinite records {nf}")
            check("step 3: non-finite" in p.stdout and "skipped" in p.stdout,
                  f"{what}: no console line: {p.stdout[-500:]}")
            if kind.startswith("loss"):
                check(tr[3]["loss"] is None, f"{what}: loss logged as {tr[3]['loss']}")
            same_state(os.path.join(rd, "step2"), os.path.join(rd, "step3"), what)
            # resumed without the fault: trains on
            p = run(ov)
            tr = {r["step"]: r for r in ot.read_metrics(rd)}
            check(p.returncode == 0 and sorted(tr) == list(range(1, 7)) and
                  all(not tr[s]["skipped"] and tr[s]["loss"] is not None for s in (4, 5, 6)),
                  f"{what}: resume after the skipped step: rc {p.returncode} {p.stderr[-300:]}")
            print(f"{what} at step 3: skipped; step3 == step2 bitwise (weights, moments, counts, "
                  f"window); steps 4-6 trained")

        # 3. K consecutive non-finite steps stop the run
        rk = os.path.join(tmp, "streak")
        ov = [*base, *allow, f"trainer.run_dir={rk}", "trainer.max_steps=12",
              "trainer.save_interval=2", "trainer.max_nonfinite_steps=3"]
        p = run(ov, env={"OLMO_TEST_NAN": "loss:5:100"})
        check(p.returncode == 1 and "3 consecutive steps" in p.stderr and "step4" in p.stderr,
              f"streak stop: rc {p.returncode} {p.stderr[-400:]}")
        print("streak stop:", p.stderr.strip()[:300])
        check(complete(rk) == [2, 4] and not any("tmp" in x for x in os.listdir(rk)),
              f"streak stop: checkpoints {sorted(os.listdir(rk))}")
        check("checkpoint of step 6 deferred" in p.stdout, "streak: no deferral message")
        stop = all_info(rk, "nonfinite_stop")
        check(len(stop) == 1 and stop[0]["step"] == 7 and stop[0]["first"] == 5,
              f"streak: stop record {stop}")
        p = run(ov)
        check(p.returncode == 0 and f"from {os.path.join(rk, 'step4')}" in p.stdout and
              complete(rk)[-1] == 12, f"streak: restart {p.returncode} {p.stdout[-300:]}")

        # 4. the checkpoint writer refuses a NaN weight
        rw = os.path.join(tmp, "weight")
        p = run([*base, *allow, f"trainer.run_dir={rw}", "trainer.max_steps=8",
                 "trainer.save_interval=2"], env={"OLMO_TEST_NAN": "weight:4"})
        check(p.returncode == 1 and "non-finite value" in p.stderr and "tensor '" in p.stderr,
              f"NaN weight: rc {p.returncode} {p.stderr[-400:]}")
        check(complete(rw) == [2] and sorted(os.listdir(rw)).count("step4-tmp") == 0,
              f"NaN weight: run dir {sorted(os.listdir(rw))}")
        print("NaN weight refused:", p.stderr.strip()[:240])

        # 5. two processes: a fault on rank 1 only is skipped on both
        if shutil.which(du.MPIRUN) or os.path.exists(du.MPIRUN):
            for kind, mode in (("grad", "exact"), ("loss", "fast"), ("grad_inf", "fast")):
                rd = os.path.join(tmp, f"mpi_{kind}_{mode}")
                ov = du.base_overrides(d, rd, steps=6, extra=[
                    "trainer.save_interval=1", "trainer.keep_last=10", "trainer.hard_stop_steps=3",
                    "validation.interval=0", *allow, f"dist.reduce={mode}"])
                p = du.train(2, ov, env={"OLMO_TEST_NAN": f"{kind}:3:1:1"}, check=False)
                if not check(p.returncode == 0, f"2 processes {kind}/{mode}: rc {p.returncode} "
                             f"{p.stderr[-400:]}"):
                    continue
                tr = {r["step"]: r for r in ot.read_metrics(rd)}
                check(tr[3]["skipped"] and not tr[2]["skipped"], f"2 proc {kind}: not skipped")
                same_state(os.path.join(rd, "step2"), os.path.join(rd, "step3"),
                           f"2 processes {kind} on rank 1 ({mode})")
                print(f"2 processes, {kind} on rank 1 only, dist.reduce={mode}: both ranks "
                      f"skipped step 3; step3 == step2 bitwise")
        else:
            print("SKIPPED: mpirun not found: the 2-process part did not run")
            skipped = True
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish("numeric_fault_test", skipped="the 2-process part" if skipped else None)


if __name__ == "__main__":
    main()
