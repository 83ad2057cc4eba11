#!/usr/bin/env python3
"""Fails a CI run (`make test`) when a ctest test skipped although what it needs is on this
machine. Reads ctest's JUnit report (ctest --output-junit FILE); each skipped test ("Not Run
(Skipped)": exit 77, see tests/CMakeLists.txt) must print why (GTEST_SKIP() << "why", or a
Python test's "SKIPPED: why" line), and the reason must name a prerequisite that this machine
really lacks:

  netns       "network namespaces"             `ip netns add` (and delete) succeeds
  root        "unshare", "mount", "not root"   euid 0 and `unshare -m true` succeeds
  AVX512_BF16 "AVX512_BF16", "bf16 turned off" avx512_bf16 in cpuinfo, OLMO_BF16/OLMO_ISA unset
  AVX-512     "AVX-512", "avx512"              avx512f in /proc/cpuinfo, OLMO_ISA unset
  AVX2        "AVX2"                           avx2 in /proc/cpuinfo, OLMO_ISA unset
  MPI         "mpirun"                         mpirun on PATH
  venv        "OLMO_PYTHON", "venv"            SOURCE/.venv/bin/python exists
  tokenizer   "PATH missing (scripts/fetch_tokenizer.sh)"   PATH exists

A skip whose output names none of these, or names one that is present, is an error.
Usage: check_skips.py [--source DIR] JUNIT.xml   (exit 0: every skip explained; 1: not)
Standard library only (runs before/without the venv). Prints one line per skip, nothing else
when there is none.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def can_unshare():
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return False
    return subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0


def can_netns():
    ip = shutil.which("ip")
    if os.geteuid() != 0 or not ip:
        return False
    name = f"olmo_skipcheck_{os.getpid()}"
    ok = subprocess.run([ip, "netns", "add", name], capture_output=True).returncode == 0
    if ok:
        subprocess.run([ip, "netns", "del", name], capture_output=True)
    return ok


def rules(source):
    flags = cpu_flags()
    isa_env = "OLMO_ISA" in os.environ
    venv = os.path.join(source, ".venv", "bin", "python")
    return [
        (r"network namespaces", "network namespaces (ip netns add)", lambda m: can_netns()),
        (r"unshare|\bmount|not root", "root (unshare -m)", lambda m: can_unshare()),
        (r"AVX512_BF16|bf16 turned off",
         "AVX512_BF16 (not turned off by OLMO_BF16 / OLMO_ISA)",
         lambda m: "avx512_bf16" in flags and not isa_env and "OLMO_BF16" not in os.environ),
        (r"AVX-512|avx512", "AVX-512", lambda m: "avx512f" in flags and not isa_env),
        (r"AVX2", "AVX2", lambda m: "avx2" in flags and not isa_env),
        (r"mpirun", "MPI (mpirun)", lambda m: shutil.which("mpirun") is not None),
        (r"OLMO_PYTHON|venv", "the project venv", lambda m: os.path.exists(venv)),
        (r"(\S+) missing \(scripts/fetch_tokenizer\.sh\)", "the tokenizer files",
         lambda m: os.path.exists(m.group(1))),
    ]


def skip_reasons(text):
    """The lines that say why: a GoogleTest skip's message (between "...: Skipped" and
    "[  SKIPPED ] Case"), a Python test's "SKIPPED: ..." lines."""
    out, inside = [], False
    for line in text.splitlines():
        if line.startswith("[  SKIPPED ]"):
            inside = False
        elif inside:
            out.append(line)
        elif line.rstrip().endswith(": Skipped"):
            inside = True
        elif line.startswith("SKIPPED:"):
            out.append(line)
    return "\n".join(out)


def skipped_tests(junit):
    """[(name, why)] of the tests ctest reports as skipped (why: skip_reasons of the output)."""
    out = []
    for tc in ET.parse(junit).getroot().iter("testcase"):
        if tc.find("skipped") is None:
            continue
        text = "".join((e.text or "") for e in tc.iter("system-out"))
        out.append((tc.get("name"), skip_reasons(text)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", default=os.path.join(os.path.dirname(__file__), ".."))
    ap.add_argument("junit")
    a = ap.parse_args()
    if not os.path.exists(a.junit):
        print(f"check_skips: {a.junit}: ctest JUnit report not found")
        return 1
    bad = 0
    rs = rules(os.path.abspath(a.source))
    for name, text in skipped_tests(a.junit):
        why = None
        for pat, prereq, present in rs:
            m = re.search(pat, text)
            if m:
                why = (prereq, present(m))
                break
        if why is None:
            bad += 1
            print(f"check_skips: FAIL: {name} skipped without naming a missing prerequisite"
                  + (":\n" + "\n".join("    " + x for x in text.splitlines()[-8:])
                     if text else " (no SKIPPED: line / GTEST_SKIP message)"))
        elif why[1]:
            bad += 1
            print(f"check_skips: FAIL: {name} skipped, but {why[0]} is present here: it must "
                  "run\n" + "\n".join("    " + x for x in text.splitlines()[-8:]))
        else:
            print(f"check_skips: {name} skipped: {why[0]} missing on this machine")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
