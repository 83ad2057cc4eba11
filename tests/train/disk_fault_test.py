"""A whole training run on a disk that fills up and on a run dir that turns read-only (issue 11,
item 3; tests/ckpt covers the checkpoint writer alone). Runs in a private mount namespace
(`unshare -m`, needs root / CAP_SYS_ADMIN; exit 77 = skipped, with a message, when refused).
The run is kill_campaign.py's (16 steps, a checkpoint every 2, keep_last 2, eval every 3).

1. Disk full: the run dir on a 6 MiB tmpfs (two checkpoints of 2.6 MB fit, a third does not).
   The run stops with an error that names the file and says "No space left on device"; the
   half-written stepN-tmp is removed; the newest complete checkpoint verifies. A restart on
   the still-full disk fails the same way and loses nothing. After the tmpfs is grown
   (remount size=64m) a restart resumes from the newest complete checkpoint and finishes bit
   for bit equal to a run that never saw a fault, each step once in metrics.jsonl.
2. Read-only: the run (its checkpoints synchronous here) holds inside step 5 (OLMO_TEST_HOLD:
   step4 committed, step6 not begun), its run dir is bind-mounted read-only over itself, and
   the hold is released: the next checkpoint fails with "Read-only file system" naming the path; the newest complete checkpoint survives. A restart on the read-only
   dir is refused with the same cause. After the unmount a restart finishes bitwise equal.
"""
import os
import subprocess
import sys
import tempfile

import kill_campaign as kc

from olmo_test import FAILS, check, skip
from olmo_test import tiny_data as td


def sh(*cmd):
    return subprocess.run(list(cmd), capture_output=True, text=True)


def train(data, run, env=None, extra=()):
    p, out = kc.launch(kc.overrides(data, run) + list(extra), env or {}, run + ".log")
    rc = p.wait()
    out.close()
    return rc, open(run + ".log").read()


def no_tmp(run):
    return not [x for x in os.listdir(run) if x.endswith("-tmp")]


def disk_full(tmp, data, ref):
    mnt = os.path.join(tmp, "small")
    os.makedirs(mnt)
    r = sh("mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", mnt)
    if r.returncode != 0:
        print("SKIPPED: cannot mount a tmpfs:", r.stderr.strip())
        return False
    run = os.path.join(mnt, "run")
    # Attempt 1 passes the checkpoint's free-space check (OLMO_TEST_FREE_BYTES: a large figure)
    # and fills the disk mid-write; attempt 2 meets the real check (statvfs of the tmpfs): a
    # clear error naming the run dir before anything is written. Attempt 1 writes synchronously:
    # with the async writer filling the disk, whichever of it and the step's metrics append meets
    # ENOSPC first reports (both clear errors, rc 1), a race the message check must not depend on.
    for attempt in (1, 2):
        rc, log = (train(data, run, {"OLMO_TEST_FREE_BYTES": str(1 << 40)},
                         ["trainer.async_checkpoint=false"]) if attempt == 1 else train(data, run))
        newest = kc.committed(run)
        check(rc == 1 and ("No space left on device" in log and "-tmp/" in log if attempt == 1 else
                           f"not enough free space in {run}: the checkpoint needs" in log),
              f"disk full, attempt {attempt}: rc {rc}: {log[-400:]}")
        check(newest and no_tmp(run), f"disk full, attempt {attempt}: run dir {os.listdir(run)}")
        check("warning: skipping checkpoint" not in log, f"disk full: corrupt checkpoint: {log}")
        err = [line for line in log.splitlines() if "error" in line]
        print(f"disk full, attempt {attempt}: rc {rc}, complete checkpoints {newest}, "
              f"error: {err[-1][:200] if err else '?'}")
    newest = kc.committed(run)
    check(sh("mount", "-o", "remount,size=64m", mnt).returncode == 0, "cannot grow the tmpfs")
    rc, log = train(data, run)
    check(rc == 0 and newest and f"from {run}/step{newest[-1]}" in log,
          f"disk full: restart after growing the disk: rc {rc} {log[-400:]}")
    if rc == 0 and kc.compare_round(run, ref, "disk full + restart"):
        print("disk full: after growing the disk the restart finished bitwise equal to the "
              "reference; every step once in metrics.jsonl")
    sh("umount", mnt)
    return True


def read_only(tmp, data, ref):
    run = os.path.join(tmp, "ro", "run")
    os.makedirs(os.path.dirname(run))
    hold = run + ".hold"  # beside the run dir: still writable (and removable) after the remount
    p, out = kc.launch(kc.overrides(data, run) + ["trainer.async_checkpoint=false"],
                       {"OLMO_TEST_HOLD": f"step:0:5:{hold}"}, run + ".log")
    ok = kc.wait_for(p, lambda: os.path.exists(hold), timeout=120)
    ok = check(ok and os.path.exists(os.path.join(run, "step4", "COMMITTED")) and
               not os.path.exists(os.path.join(run, "step6-tmp")),
               f"read-only: the run did not hold in step 5 after committing step4: {os.listdir(run)}")
    mounted = False
    if ok:
        r1 = sh("mount", "--bind", run, run)
        r2 = sh("mount", "-o", "remount,ro,bind", run) if r1.returncode == 0 else r1
        mounted = r1.returncode == 0
        os.remove(hold)  # released: the run goes on from inside step 5
        if r2.returncode != 0:
            p.kill()
            p.wait()
            out.close()
            if mounted:
                sh("umount", run)
            print("SKIPPED: cannot bind-mount read-only:", r2.stderr.strip())
            return False
    else:
        p.kill()  # held (or gone): nothing to release
    rc = p.wait()
    out.close()
    log = open(run + ".log").read()
    at_ro = kc.committed(run)
    check(ok and rc == 1 and "Read-only file system" in log and run in log,
          f"read-only: rc {rc}: {log[-400:]}")
    check(at_ro and at_ro[-1] >= 4, f"read-only: complete checkpoints {at_ro}")
    err = [line for line in log.splitlines() if "error" in line]
    print(f"read-only from step 4: rc {rc}, complete checkpoints {at_ro}, error: "
          f"{err[-1][:200] if err else '?'}")
    rc, log2 = train(data, run)
    check(rc == 1 and "Read-only file system" in log2, f"read-only restart: rc {rc} {log2[-300:]}")
    print("restart on the read-only run dir:", (log2.strip().splitlines() or ["?"])[-1][:200])
    check(kc.committed(run) == at_ro, "read-only restart changed the checkpoints")
    check(sh("umount", run).returncode == 0, "cannot unmount the read-only bind mount")
    rc, log3 = train(data, run)
    check(rc == 0 and f"from {run}/step{at_ro[-1]}" in log3,
          f"read-only: restart after the unmount: rc {rc} {log3[-400:]}")
    if rc == 0 and kc.compare_round(run, ref, "read-only + restart"):
        print(f"read-only: after the unmount the restart resumed from step{at_ro[-1]} and "
              "finished bitwise equal to the reference")
    return True


def inner():
    tmp = tempfile.mkdtemp(prefix="olmo_disk_")
    # Private mounts: nothing mounted here is seen outside this namespace.
    sh("mount", "--make-rprivate", "/")
    data = td.make_data(os.path.join(tmp, "data"))
    ref = os.path.join(tmp, "ref")
    rc, log = train(data, ref)
    if not check(rc == 0, f"reference run failed: {log[-400:]}"):
        return 1
    did = [disk_full(tmp, data, ref), read_only(tmp, data, ref)]
    sh("rm", "-rf", tmp)
    if FAILS:
        print(f"{len(FAILS)} failures")
        return 1
    if not any(did):
        return 77
    print("disk_fault_test: OK" + ("" if all(did) else " (one part skipped: exit 77)"))
    return 0 if all(did) else 77


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--inner":
        sys.exit(inner())
    try:
        probe = sh("unshare", "-m", "true")
    except FileNotFoundError:
        probe = None
    if probe is None or probe.returncode != 0:
        skip("cannot create a private mount namespace (unshare -m needs root): "
             + (probe.stderr.strip() if probe else "no unshare"))
    p = subprocess.run(["unshare", "-m", sys.executable, os.path.abspath(__file__), "--inner"])
    sys.exit(p.returncode)


if __name__ == "__main__":
    main()
