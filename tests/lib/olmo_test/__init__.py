"""olmo_test: the shared helpers of every Python test under tests/ (tests/README.md, "tests/lib").

On the import path through PYTHONPATH, which tests/CMakeLists.txt's olmo_py_test sets (tests/lib
and the area helper directories); no test edits sys.path. Outside ctest:
`PYTHONPATH=tests/lib:tests/distributed .venv/bin/python tests/AREA/x.py` (tests/distributed:
dist_util and launch_util, used beyond their area).

- paths: SRC (OLMO_SOURCE_DIR), BUILD (OLMO_BINARY_DIR), BIN (OLMO_BIN, build/olmo), PY
  (OLMO_PYTHON, the venv's python)
- checks, the suite's failure convention: check(cond, msg, detail) prints `ok   msg` or
  `FAIL msg: detail`, records the failure in FAILS and returns cond (the test goes on);
  fail(msg) records a failure found otherwise; finish(name) exits 1 naming the count of failed
  checks, else prints `NAME: all checks passed` (or exits 77 when a part was skipped:
  finish(name, skipped="the part"))
- skip(why): prints `SKIP: why` and exits 77 (ctest SKIP_RETURN_CODE; tests/check_skips.py
  requires `why` to name a prerequisite this machine lacks)
- olmo(*args): runs build/olmo and asserts its exit status (want=0, an int, or "error" = 1..125);
  bin_path(): the binary, for a command line of its own (mpirun, Popen)
- metrics.jsonl: read_metrics(run_dir, kind), train_records, eval_records, once_problems
- temp dirs: tmp_dir(name) (a context manager; kept when OLMO_KEEP_TMP=1), mkdtemp(name)
Submodules: olmo_test.cpu_features (ISA levels / bf16 modes of this CPU), olmo_test.refs (the
reference runners: OLMo-core's trainer, OLMo-core's data order, the HF model), olmo_test.ckpt_edit
(planting changes in a checkpoint: a flipped bit, a rewritten section, checksums resealed).
"""
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter

SRC = os.environ.get("OLMO_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))
BUILD = os.environ.get("OLMO_BINARY_DIR") or os.path.join(SRC, "build")
BIN = os.environ.get("OLMO_BIN") or os.path.join(BUILD, "olmo")
PY = os.environ.get("OLMO_PYTHON") or sys.executable

FAILS = []  # messages of the failed check() calls of this process


def check(cond, msg, detail="", quiet=False):
    """Prints `ok   msg` (unless quiet) or `FAIL msg[: detail]`, records a failure in FAILS and
    returns bool(cond): the test goes on and finish() reports the count."""
    ok = bool(cond)
    if not ok or not quiet:
        print(("ok   " if ok else "FAIL ") + msg + (f": {detail}" if detail != "" else ""),
              flush=True)
    if not ok:
        FAILS.append(msg)
    return ok


def fail(msg, detail=""):
    """A failed check (check(False, msg, detail)): for a test that finds problems as it goes."""
    return check(False, msg, detail)


def check_le(what, err, tol):
    """check(err <= tol) printing the error and the tolerance (parity tests)."""
    return check(err <= tol, what, f"{err:.3e} (tol {tol:.0e})")


def finish(name, skipped=None):
    """Exit 1 naming the count of failed checks; else `NAME: all checks passed`, and exit 77
    when `skipped` names a part that could not run here (a line above says why)."""
    if FAILS:
        print(f"{name}: {len(FAILS)} failed checks", flush=True)
        sys.exit(1)
    if skipped:
        print(f"{name}: all checks passed ({skipped} skipped: exit 77)", flush=True)
        sys.exit(77)
    print(f"{name}: all checks passed", flush=True)


def skip(why):
    """The whole test cannot run here: `SKIP: why` (why names the missing prerequisite, as
    tests/check_skips.py requires) and exit 77."""
    print(f"SKIP: {why}", flush=True)
    sys.exit(77)


def _want_ok(rc, want):
    return 1 <= rc <= 125 if want == "error" else rc == want


def run(cmd, check=True, want=0, env=None, timeout=None, cwd=None, input=None):
    """Runs cmd (a list); with check, AssertionError naming the command, its exit status and its
    output unless the status is `want` (0, an int, or "error" = 1..125). CompletedProcess (text)."""
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env,
                       timeout=timeout, cwd=cwd, input=input)
    if check and not _want_ok(p.returncode, want):
        raise AssertionError(f"{' '.join(map(str, cmd))} exited {p.returncode} (want {want}):\n"
                             f"{p.stdout}\n{p.stderr}")
    return p


def bin_path():
    """The olmo binary: OLMO_BIN read at each call (a test may pin a copy of it), else BIN."""
    return os.environ.get("OLMO_BIN") or BIN


def olmo(*args, check=True, want=0, env=None, timeout=None, cwd=None, input=None):
    """Runs build/olmo (bin_path()) with args; asserts its exit status (see run())."""
    return run([bin_path(), *args], check=check, want=want, env=env, timeout=timeout, cwd=cwd,
               input=input)


def script(path, *args, check=False, **kw):
    """Runs a Python script with the project venv (OLMO_PYTHON); prints the tail of its output
    when it fails. CompletedProcess (text)."""
    p = run([PY, path, *args], check=False, **kw)
    if p.returncode != 0:
        print(p.stdout[-2000:], p.stderr[-3000:])
        if check:
            raise AssertionError(f"{path} {' '.join(map(str, args))} exited {p.returncode}")
    return p


# ---- metrics.jsonl (one JSON record a line; "kind": train, eval, validation, info, ...) ----

def read_metrics(run_dir, kind="train"):
    """The records of run_dir/metrics.jsonl whose "kind" is `kind` (every record: kind=None),
    in file order."""
    out = []
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        for line in f:
            if not line.strip():
                continue
            r = json.loads(line)
            if kind is None or r.get("kind") == kind:
                out.append(r)
    return out


def train_records(run_dir):
    """step -> (loss, grad_norm, lr, batch_hash) of metrics.jsonl's train records (bit-exact JSON
    doubles). A step recorded twice (a resume that re-ran a step without dropping its old
    record) raises AssertionError instead of collapsing into one entry."""
    out = {}
    for r in read_metrics(run_dir):
        if r["step"] in out:
            raise AssertionError(f"{run_dir}/metrics.jsonl: train step {r['step']} recorded twice")
        out[r["step"]] = (r["loss"], r["grad_norm"], r["lr"], r["batch_hash"])
    return out


def eval_records(run_dir):
    """(step, set) -> loss of metrics.jsonl's eval records; a pair recorded twice raises."""
    out = {}
    for r in read_metrics(run_dir, "eval"):
        k = (r["step"], r["set"])
        if k in out:
            raise AssertionError(f"{run_dir}/metrics.jsonl: eval {k} recorded twice")
        out[k] = r["loss"]
    return out


def once_problems(run_dir, steps, evals=()):
    """[] when metrics.jsonl holds every train step 1..steps exactly once and no other, and each
    (step, set) of `evals` exactly once and no other eval record; else what is wrong. Only rank 0
    writes metrics.jsonl: in a data-parallel job these are the job's records."""
    probs = []
    ts = Counter(r["step"] for r in read_metrics(run_dir))
    twice = sorted(s for s, n in ts.items() if n > 1)
    if twice:
        probs.append(f"train steps recorded more than once: {twice}")
    if sorted(ts) != list(range(1, steps + 1)):
        probs.append(f"train steps {sorted(ts)}, want 1..{steps}")
    es = Counter((r["step"], r["set"]) for r in read_metrics(run_dir, "eval"))
    twice = sorted(k for k, n in es.items() if n > 1)
    if twice:
        probs.append(f"eval records more than once: {twice}")
    if sorted(es) != sorted(evals):
        probs.append(f"eval records {sorted(es)}, want {sorted(evals)}")
    return probs


# ---- temp run dirs ----

def _keep():
    return os.environ.get("OLMO_KEEP_TMP", "") not in ("", "0")


def mkdtemp(name):
    """A fresh directory /tmp/olmo_NAME_XXXX that the caller removes (rmtree)."""
    return tempfile.mkdtemp(prefix=f"olmo_{name}_")


@contextlib.contextmanager
def tmp_dir(name):
    """with tmp_dir("resume") as tmp: a fresh /tmp/olmo_NAME_XXXX, removed on exit (kept and
    printed when OLMO_KEEP_TMP=1, to look at a failed run)."""
    d = mkdtemp(name)
    try:
        yield d
    finally:
        if _keep():
            print(f"kept {d} (OLMO_KEEP_TMP)", flush=True)
        else:
            shutil.rmtree(d, ignore_errors=True)
