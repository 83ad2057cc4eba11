"""Helpers of the OLMo-core reference tests (olmo_core_ref_test.py, olmo_core_chain_test.py):
running scripts/olmo_core_run.py / olmo_core_ckpt.py with the project venv, `olmo compare`, and
a check() that records failures."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiny_data  # noqa: E402

SRC = os.environ.get("OLMO_SOURCE_DIR", ".")
PY = os.environ.get("OLMO_PYTHON", sys.executable)
RUNNER = os.path.join(SRC, "scripts", "olmo_core_run.py")
CKPT = os.path.join(SRC, "scripts", "olmo_core_ckpt.py")
FAIL = []


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg, flush=True)
    if not cond:
        FAIL.append(msg)


def script(path, *args):
    """Runs a scripts/*.py with the venv python; returns CompletedProcess (text)."""
    p = subprocess.run([PY, path, *args], capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stdout[-2000:], p.stderr[-3000:])
    return p


def reference(config, overrides, run_dir, noise_floor=True):
    # One thread: bitwise the same as two at this size, and 4x faster on a busy 2-core machine.
    return script(RUNNER, config, *overrides, "--run-dir", run_dir, "--threads", "1",
                  *(["--noise-floor"] if noise_floor else []))


def compare(run, ref, *flags):
    p = tiny_data.olmo("compare", run, ref, "--no-plot", *flags, check=False)
    return p.returncode, p.stdout + p.stderr


def first_violation(out):
    m = re.search(r"OUT OF TOLERANCE step (\d+) (\S+):", out)
    return (int(m.group(1)), m.group(2)) if m else (None, None)


def finish(name):
    if FAIL:
        print(f"{len(FAIL)} failures")
        sys.exit(1)
    print(f"{name}: all checks passed")
