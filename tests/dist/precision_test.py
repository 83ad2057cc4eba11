"""model.precision=auto under mpirun: every rank probes for itself, and the job must still run
one precision. Rank 1 is started with OLMO_BF16=0 (its CPU "has no bf16"), rank 0 without: the
job runs fp32 on both ranks (start record and stderr say so) and its per-step losses equal, bit
for bit, a 2-process run with model.precision=fp32. (On a CPU without AVX512_BF16 both ranks
pick fp32 by themselves; the bitwise check still holds, the agreement message does not apply.)
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dist_util as du  # noqa: E402


def main():
    tmp = tempfile.mkdtemp(prefix="olmo_dist_precision_")
    data = du.td.make_data(os.path.join(tmp, "data"), train_tokens=64 * 12 * 4)
    exe = os.environ.get("OLMO_BIN", "build/olmo")
    fails = []

    ref = os.path.join(tmp, "fp32")
    du.train(2, du.base_overrides(data, ref, steps=3, extra=["model.precision=fp32"]))

    run = os.path.join(tmp, "auto")
    ov = du.base_overrides(data, run, steps=3, extra=["model.precision=auto"])
    cmd = [du.MPIRUN, "--oversubscribe", "--allow-run-as-root",
           "-np", "1", "env", "OLMO_BF16=1", exe, "train", du.td.tiny_config(), *ov, ":",
           "-np", "1", "env", "OLMO_BF16=0", exe, "train", du.td.tiny_config(), *ov]
    e = dict(os.environ)
    e.pop("OMP_NUM_THREADS", None)
    p = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=300)
    if p.returncode != 0:
        print(p.stdout, p.stderr)
        raise SystemExit(f"FAIL: mixed-precision-capability job exited {p.returncode}")
    rec = du.start_record(run)
    if rec.get("precision") != "fp32":
        fails.append(f"start record precision = {rec.get('precision')}, want fp32")
    rank0_bf16 = "precision: auto -> bf16_mixed" in p.stderr
    if rank0_bf16 and "auto -> fp32 on all 2 processes" not in p.stderr:
        fails.append("rank 0 chose bf16_mixed but no agreement message:\n" + p.stderr[-2000:])
    a, b = du.steps(ref), du.steps(run)
    if a != b:
        fails.append(f"losses differ from the fp32 run: {a} vs {b}")
    print(f"rank 0 probe chose bf16_mixed: {rank0_bf16}; start record precision "
          f"{rec.get('precision')}; steps equal to fp32: {a == b}")
    if fails:
        for f in fails:
            print("FAIL:", f)
        raise SystemExit(1)
    shutil.rmtree(tmp, ignore_errors=True)
    print("ok")


if __name__ == "__main__":
    main()
