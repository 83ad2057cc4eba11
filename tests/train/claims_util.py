"""Check bookkeeping of the README-claim tests (tests/*/claims_*_test.py): check() prints each
check as `ok` / `FAIL` and records the failures; finish() exits 1 naming their count, else
prints NAME: OK."""
import sys

FAILS = []


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg, flush=True)
    if not cond:
        FAILS.append(msg)
    return cond


def finish(name):
    if FAILS:
        print(f"{len(FAILS)} failures")
        sys.exit(1)
    print(f"{name}: OK")
