"""The same training bits under every ISA and thread count (docs/invariance.md).

The tiny config (tests/train, generated tokens) trains 3 steps, saving at step 3, under every
dispatch level this CPU can execute (OLMO_ISA=scalar/avx2/avx512) and 1, 2 and 3 threads; per
level and thread count, the per-step loss / grad norm / LR / batch hash and every tensor of the
final checkpoint (weights and both AdamW moments) must be bitwise equal to the first run's. The
first run is at the CPU's own level. A level the CPU lacks is announced as NOT RUN
(tests/check_skips.py). fp32 only: bf16_mixed's GEMM (gemm_bf16) is still oneDNN's, whose bits
depend on the CPU (docs/invariance.md).
"""
import os
import shutil
import tempfile

import dist_util as du
import olmo_test as ot
from olmo_test import check, finish
from olmo_test import cpu_features as cf
from olmo_test import tiny_data as td

THREADS = (1, 2, 3)


def train(data, run, isa, threads):
    env = dict(os.environ, OLMO_ISA=isa)
    env.pop("OMP_NUM_THREADS", None)
    ot.run([ot.bin_path(), "train", td.tiny_config(), f"data.mix={data['mix']}",
            f"trainer.run_dir={run}", "trainer.max_steps=3", "trainer.save_interval=3",
            f"trainer.threads={threads}", "model.precision=fp32"], env=env)
    return du.steps(run), du.tensors(du.final_dir(run))


def main():
    for lvl in cf.ISAS:
        if lvl not in cf.isas():
            cf.not_run(f"training under OLMO_ISA={lvl}", cf.lacks(lvl))
    tmp = tempfile.mkdtemp(prefix="olmo_isa_inv_")
    try:
        data = td.make_data(os.path.join(tmp, "data"), train_tokens=64 * 8 * 4)
        levels = list(reversed(cf.isas()))  # the CPU's own level first
        ref = None
        for lvl in levels:
            for t in THREADS:
                steps, tensors = train(data, os.path.join(tmp, f"{lvl}_{t}"), lvl, t)
                if ref is None:
                    ref, ref_at = (steps, tensors), f"{lvl} x{t}"
                    check(len(steps) == 3, f"{ref_at}: 3 steps logged", str(steps))
                    continue
                check(steps == ref[0], f"{lvl} x{t}: per-step loss / grad norm / lr / batch hash "
                      f"equal to {ref_at}")
                diff = [n for n in ref[1] if ref[1][n].tobytes() != tensors[n].tobytes()]
                check(sorted(tensors) == sorted(ref[1]) and not diff,
                      f"{lvl} x{t}: all {len(ref[1])} checkpoint tensors bitwise equal to {ref_at}",
                      f"{len(diff)} differ: {diff[:5]}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish("isa_invariance")


if __name__ == "__main__":
    main()
