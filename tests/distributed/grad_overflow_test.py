"""A rank-local overflow of the exact reduction across real ranks (issue 45, item 3).

OLMO_TEST_GRAD_SCALE (train/test_faults.h) multiplies one instance's gradient by 2^16 at step K,
on one rank only: that rank's conversion outgrows the scales the previous step left (kHeadroom
binades), the others' do not. The overflow flag and the exponents are max-reduced
(dist::GradReducer::agree_scales), so every rank must redo the step alike; a rank that decided
otherwise would leave the job hung or its bits apart. Checked at 2, 3 and 4 processes (mpirun,
dist.reduce=exact, 12 instances per step, instance 1 = micro-batch 0 of rank 1) against the
1-process run with the same injection (instance 1 = its micro-batch 1):
  - `reduce_redos` is 1 at step K (and at step 1, the scales' measurement), 0 elsewhere;
  - rank 0 said "step K: exact reduction rescaled";
  - every train record and every tensor of the final checkpoint is bitwise equal to the
    1-process run's.
And the injection is what makes the redo: a run without it has none at step K. (Its final bits
equal the clean run's while a redo recomputes the step without the injection: the raised scales
still hold the correctly rounded sum. Not asserted: a redo that re-converted kept gradients would
keep the injection.)
"""
import os
import shutil
import subprocess
import tempfile

import dist_util as du
import olmo_test as ot
from olmo_test import check, finish
from olmo_test import tiny_data as td

STEPS, K = 5, 3
X = 65536  # 2^16: exact in fp32, far beyond the reduction's headroom


def redos(run):
    return {r["step"]: r["reduce_redos"] for r in ot.read_metrics(run)}


def main():
    tmp = tempfile.mkdtemp(prefix="olmo_dist_overflow_")
    try:
        data = td.make_data(os.path.join(tmp, "data"), train_tokens=64 * 12 * (STEPS + 1))

        def run(np_, inject):
            d = os.path.join(tmp, f"np{np_}{'' if inject else '_clean'}")
            env = {"OLMO_TEST_GRAD_SCALE": inject} if inject else None
            try:  # ~2 s each quiet: a job that hangs is ranks that did not redo alike
                p = du.train(np_, du.base_overrides(data, d, steps=STEPS,
                                                    extra=["allow_fault_injection=true"]),
                             env=env, timeout=120)
            except subprocess.TimeoutExpired:
                check(False, f"{np_} processes ({inject}): the job finishes (it hung for 120 s: "
                      "the ranks did not make the same redo decision)")
                finish("dist_grad_overflow")
            return d, p

        want_redos = {s: int(s in (1, K)) for s in range(1, STEPS + 1)}
        clean, _ = run(1, None)
        check(redos(clean) == {s: int(s == 1) for s in range(1, STEPS + 1)},
              f"without the injection only step 1 (the measurement) redoes: {redos(clean)}")
        ref, p = run(1, f"{K}:{X}:0:1")
        check(redos(ref) == want_redos, f"1 process, instance 1 x{X} at step {K}: reduce_redos "
              f"{redos(ref)}, expected 1 at steps 1 and {K} only")
        check(f"step {K}: exact reduction rescaled" in p.stderr,
              f"1 process: the redo of step {K} was announced")
        ref_t, ref_s = du.tensors(du.final_dir(ref)), du.steps(ref)
        for np_ in (2, 3, 4):
            d, p = run(np_, f"{K}:{X}:1:0")
            check(redos(d) == want_redos, f"{np_} processes, rank 1's micro-batch 0 x{X} at step "
                  f"{K}: reduce_redos {redos(d)}, expected 1 at steps 1 and {K} only")
            check(f"step {K}: exact reduction rescaled" in p.stderr,
                  f"{np_} processes: rank 0 announced the redo of step {K} (its own gradient did "
                  "not overflow)")
            check(du.steps(d) == ref_s, f"{np_} processes: every train record bitwise equal to "
                  "the 1-process run with the same injection")
            check(du.bitwise_equal(du.tensors(du.final_dir(d)), ref_t),
                  f"{np_} processes: every tensor of step{STEPS} bitwise equal to the 1-process "
                  "run with the same injection")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish("dist_grad_overflow")


if __name__ == "__main__":
    main()
