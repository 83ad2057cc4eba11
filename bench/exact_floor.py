"""Is the exact reduction inside the reference's noise floor, as the fp32 one is?

OLMo-core's own Trainer runs the tiny recipe (tests/configs/tiny.yaml, 20 steps) with its two twins
(scripts/olmo_core_run.py --noise-floor: a 1-ulp twin and a float64-clip-norm twin); olmo.cpp
then trains the same recipe from the same initial weights three ways -- dist.reduce=fast (plain
fp32 sums) on 1 process, dist.reduce=exact on 1 process and on 2 processes -- and `olmo compare`
checks each against the reference in units of that floor. Prints each comparison's verdict and
its table (per quantity: our largest difference / the floor, and the twin that set it).

Usage: .venv/bin/python bench/exact_floor.py [OUT_DIR]   (~5-10 min on 2 cores)
Record: bench/results/dist.md ("noise floor").
"""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))  # olmo_test (tests/README.md)
os.environ.setdefault("OLMO_SOURCE_DIR", ROOT)
os.environ.setdefault("OLMO_BIN", os.path.join(ROOT, "build", "olmo"))
from olmo_test import tiny_data  # noqa: E402
from olmo_test.refs import compare, reference  # noqa: E402


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="olmo_exact_floor_")
    d = tiny_data.make_data(os.path.join(out, "data"))
    common = [f"data.mix={d['mix']}", f"eval.sets={{val: {d['val']}}}", "validation.interval=5",
              "validation.max_instances=8"]
    ref = os.path.join(out, "ref")
    p = reference(tiny_data.tiny_config(), common, ref)
    if p.returncode != 0:
        sys.exit("the OLMo-core reference run failed")
    for name, np_, mode in (("fast_np1", 1, "fast"), ("exact_np1", 1, "exact"),
                            ("exact_np2", 2, "exact")):
        run = os.path.join(out, name)
        args = [os.environ["OLMO_BIN"], "train", tiny_data.tiny_config(), *common,
                f"trainer.run_dir={run}", f"trainer.init_from_hf={ref}/init_hf",
                "trainer.log_batch_indices=true", f"dist.reduce={mode}", "trainer.threads=1"]
        if np_ > 1:
            args = ["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", str(np_)] + args
        subprocess.run(args, check=True, capture_output=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
        rc, text = compare(run, ref)
        lines = text.splitlines()
        table = lines[next(i for i, l in enumerate(lines) if l.startswith("quantity")):]
        # Under mpirun trainer.log_batch_indices logs rank 0's instances only, so `olmo compare`
        # flags every step's instance list of a multi-process run: counted, not printed.
        inst = [l for l in table if l.startswith("OUT OF TOLERANCE") and " instances:" in l]
        print(f"== {name}: olmo compare exit {rc}"
              + (f" ({len(inst)} instance-list lines: rank 0's instances only)" if inst else ""))
        print("\n".join(l for l in table if l not in inst))
    print(f"runs in {out}")


if __name__ == "__main__":
    main()
