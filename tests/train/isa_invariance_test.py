"""The same training bits under every ISA and thread count (docs/invariance.md).

The tiny config (tests/train, generated tokens) trains 3 steps, saving at step 3, in fp32 and in
bf16_mixed, under every kernel path this CPU can execute and 1, 2 and 3 threads: fp32 at each
dispatch level (OLMO_ISA=scalar/avx2/avx512); bf16_mixed natively (AVX512_BF16: VDPBF16PS GEMMs
and attention) and emulated (OLMO_BF16=emulate, the exact emulation) at each level. Per precision,
per path and thread count, the per-step loss / grad norm / LR / batch hash and every tensor of
the final checkpoint (weights and both AdamW moments) must be bitwise equal to the first run's
(the CPU's best path). A path the CPU lacks is announced as NOT RUN (tests/check_skips.py).
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


def paths(precision):
    """(name, env) of every path of `precision` this CPU runs, the best first."""
    out = []
    for lvl in reversed(cf.isas()):
        if precision == "fp32":
            out.append((lvl, {"OLMO_ISA": lvl}))
            continue
        if lvl == "avx512" and cf.native_bf16():
            out.append(("avx512/bf16-native", {"OLMO_ISA": lvl}))
        out.append((f"{lvl}/bf16-emulated", {"OLMO_ISA": lvl, "OLMO_BF16": "emulate"}))
    return out


def train(data, run, precision, path_env, threads):
    env = dict(os.environ, **path_env)
    env.pop("OMP_NUM_THREADS", None)
    ot.run([ot.bin_path(), "train", td.tiny_config(), f"data.mix={data['mix']}",
            f"trainer.run_dir={run}", "trainer.max_steps=3", "trainer.save_interval=3",
            f"trainer.threads={threads}", f"model.precision={precision}"], env=env)
    return du.steps(run), du.tensors(du.final_dir(run))


def main():
    for lvl in cf.ISAS:
        if lvl not in cf.isas():
            cf.not_run(f"training under OLMO_ISA={lvl}", cf.lacks(lvl))
    if not cf.native_bf16():
        cf.not_run("bf16_mixed training on the native AVX512_BF16 kernels", cf.lacks_bf16())
    tmp = tempfile.mkdtemp(prefix="olmo_isa_inv_")
    try:
        data = td.make_data(os.path.join(tmp, "data"), train_tokens=64 * 8 * 4)
        for precision in ("fp32", "bf16_mixed"):
            ref = None
            for name, env in paths(precision):
                for t in THREADS:
                    at = f"{precision} {name} x{t}"
                    run = os.path.join(tmp, f"{precision}_{name.replace('/', '_')}_{t}")
                    steps, tensors = train(data, run, precision, env, t)
                    if ref is None:
                        ref, ref_at = (steps, tensors), at
                        check(len(steps) == 3, f"{ref_at}: 3 steps logged", str(steps))
                        continue
                    check(steps == ref[0], f"{at}: per-step loss / grad norm / lr / batch hash "
                          f"equal to {ref_at}")
                    diff = [n for n in ref[1] if ref[1][n].tobytes() != tensors[n].tobytes()]
                    check(sorted(tensors) == sorted(ref[1]) and not diff,
                          f"{at}: all {len(ref[1])} checkpoint tensors bitwise equal to {ref_at}",
                          f"{len(diff)} differ: {diff[:5]}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish("isa_invariance")


if __name__ == "__main__":
    main()
