"""README "Not enough memory": the memory plan is checked against the cgroup's memory limit
headroom (src/train/resource_limits.cpp), end to end with a real cgroup.

A child memory cgroup is created under this process's own one (cgroup v2: memory.max; v1:
memory.limit_in_bytes) with a 512 MiB limit, far below /proc/meminfo MemAvailable on the test
machines, and `olmo train` is started inside it (a shell writes its pid to cgroup.procs, then
execs olmo):
  * a model whose plan needs ~1.2 GiB (tests/configs/tiny.yaml with d_model 1024, ffn 4096) is refused
    before anything is allocated, the error naming the cgroup's limit file and the plan;
  * the tiny model (plan ~6.5 MiB) starts and trains 2 steps in the same cgroup.
Needs root and a writable memory cgroup hierarchy: otherwise it exits 77 (skipped, reason
printed).
"""
import os
import shutil
import subprocess
import tempfile

import olmo_test as ot
from olmo_test import check, finish, skip
from olmo_test import tiny_data as td

LIMIT = 512 << 20


def make_cgroup():
    """(dir, limit file name) of a new child memory cgroup with LIMIT, or skip."""
    lines = open("/proc/self/cgroup").read().splitlines()
    v1 = [l.split(":", 2)[2] for l in lines if l.split(":")[1] == "memory"]
    if v1 and os.path.isdir("/sys/fs/cgroup/memory"):
        parent, limit_file = "/sys/fs/cgroup/memory" + v1[0].rstrip("/"), "memory.limit_in_bytes"
    else:
        v2 = [l.split(":", 2)[2] for l in lines if l.startswith("0::")]
        if not v2:
            skip("no memory cgroup found in /proc/self/cgroup")
        parent, limit_file = "/sys/fs/cgroup" + v2[0].rstrip("/"), "memory.max"
    d = os.path.join(parent, f"olmo_test_{os.getpid()}")
    try:
        os.mkdir(d)
    except OSError as e:
        skip(f"cannot create a child cgroup under {parent}: {e}")
    try:
        with open(os.path.join(d, limit_file), "w") as f:
            f.write(str(LIMIT))
    except OSError as e:
        os.rmdir(d)
        skip(f"cannot set {limit_file} in {d}: {e}")
    return d, limit_file


def in_cgroup(cg, args):
    exe = ot.bin_path()
    return subprocess.run(["sh", "-c", f'echo $$ > "{cg}/cgroup.procs" && exec "$@"', "sh", exe,
                           "train", td.tiny_config(), *args], capture_output=True, text=True)


def main():
    if os.geteuid() != 0:
        skip("needs root to create a cgroup")
    cg, limit_file = make_cgroup()
    tmp = tempfile.mkdtemp(prefix="olmo_cgroup_")
    try:
        d = td.make_data(tmp)
        base = [f"data.mix={d['mix']}", "validation.interval=0", "trainer.threads=1"]
        big = ["model.d_model=1024", "model.n_heads=16", "model.n_kv_heads=8",
               "model.ffn_hidden=4096"]
        rd = os.path.join(tmp, "big")
        p = in_cgroup(cg, [*base, *big, f"trainer.run_dir={rd}", "trainer.max_steps=1"])
        msg = p.stderr.strip()
        check(p.returncode != 0 and "not enough memory to start" in msg and
              f"{cg}/{limit_file}" in msg and "per process" in msg,
              f"plan above the cgroup limit refused naming {limit_file}: rc {p.returncode}: "
              f"{msg[-400:]}")
        rd = os.path.join(tmp, "small")
        p = in_cgroup(cg, [*base, f"trainer.run_dir={rd}", "trainer.max_steps=2"])
        check(p.returncode == 0 and len(ot.read_metrics(rd)) == 2,
              f"the tiny model trains in the same cgroup: rc {p.returncode} {p.stderr[-300:]}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            os.rmdir(cg)
        except OSError as e:
            print(f"warning: cannot remove {cg}: {e}")
    finish("cgroup_memory_test")


if __name__ == "__main__":
    main()
