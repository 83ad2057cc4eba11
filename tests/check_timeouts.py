#!/usr/bin/env python3
"""Fails when a registered ctest test has no TIMEOUT, or was given OLMO_MPIRUN (so it starts
mpirun) without RESOURCE_LOCK mpi (rules: tests/README.md). Reads the CTestTestfile.cmake files
that ctest itself reads: BUILD/CTestTestfile.cmake and the subdirs() it names, recursively.
Usage: check_timeouts.py BUILD_DIR   (exit 0: every test complies; 1: not, each one named)
Registered as the ctest test meta_timeouts. Standard library only.
"""
import os
import re
import sys

# One argument of a generated CTestTestfile.cmake command: [=[bracket]=], "quoted", or bare.
ARG = re.compile(r'\[(=*)\[(.*?)\]\1\]|"((?:[^"\\]|\\.)*)"|([^\s()"]+)', re.S)
SPACE = re.compile(r'\s*(#[^\n]*\n?)?')
CALL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*\(')
BRACKET = re.compile(r'\[(=*)\[')


def args(text):
    out = []
    for m in ARG.finditer(text):
        if m.group(2) is not None:
            out.append(m.group(2))
        elif m.group(3) is not None:
            out.append(re.sub(r'\\(.)', r'\1', m.group(3)))
        else:
            out.append(m.group(4))
    return out


def commands(text):
    """(command, argument text) of each top-level call, brackets and quotes respected."""
    i, n = 0, len(text)
    while i < n:
        m = SPACE.match(text, i)
        if m.group(1) is not None:
            i = m.end()
            continue
        m = CALL.match(text, i)
        if not m:
            i += 1
            continue
        name, j, depth = m.group(1), m.end(), 1
        while j < n and depth:
            b = BRACKET.match(text, j)
            if b:
                j = text.index("]" + b.group(1) + "]", b.end()) + len(b.group(1)) + 2
                continue
            c = text[j]
            if c == '"':
                j += 1
                while text[j] != '"':
                    j += 2 if text[j] == "\\" else 1
            elif c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            j += 1
        yield name.lower(), text[m.end():j - 1]
        i = j


def tests(build):
    """{name: {property: value}} over the CTestTestfile.cmake tree under build."""
    out, todo = {}, [build]
    while todo:
        d = todo.pop()
        f = os.path.join(d, "CTestTestfile.cmake")
        if not os.path.exists(f):
            continue
        with open(f) as fh:
            text = fh.read()
        for cmd, a in commands(text):
            v = args(a)
            if cmd == "add_test" and v:
                out.setdefault(v[0], {})
            elif cmd == "set_tests_properties" and "PROPERTIES" in v:
                k = v.index("PROPERTIES")
                props = dict(zip(v[k + 1::2], v[k + 2::2]))
                for t in v[:k]:
                    out.setdefault(t, {}).update(props)
            elif cmd == "subdirs":
                todo.extend(os.path.join(d, s) for s in v)
    return out


def seconds(props):
    try:
        return float(props.get("TIMEOUT", "0"))
    except ValueError:
        return 0.0


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip())
        return 2
    build = os.path.abspath(sys.argv[1])
    ts = tests(build)
    if not ts:
        print(f"check_timeouts: no tests found under {build} (not configured?)")
        return 1
    bad = []
    for name, p in sorted(ts.items()):
        if seconds(p) <= 0:
            bad.append(f"{name}: no TIMEOUT")
        locks = p.get("RESOURCE_LOCK", "").split(";")
        if "OLMO_MPIRUN=" in p.get("ENVIRONMENT", "") and "mpi" not in locks:
            bad.append(f"{name}: given OLMO_MPIRUN (starts mpirun) without RESOURCE_LOCK mpi")
    for b in bad:
        print("check_timeouts: FAIL:", b)
    longest = max(ts, key=lambda t: seconds(ts[t]))
    print(f"check_timeouts: {len(ts)} tests, {len(bad)} problem(s); longest TIMEOUT "
          f"{ts[longest].get('TIMEOUT')} s ({longest})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
