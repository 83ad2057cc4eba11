#!/usr/bin/env python3
"""meta_registered: no test can vanish from the suite. Every test name registered under tests/
(tests/<area>/<name>_test.cpp -> <area>_<name>; the first argument of olmo_py_test,
olmo_mpi_py_test, olmo_cli_test, add_test(NAME ...) and olmo_fuzz_target (fuzz_replay_<parser>)
in tests/CMakeLists.txt and tests/*/*.cmake) must be listed by `ctest -N` in the build
directory, and no registration may sit inside an if() on MPI (MPIEXEC_EXECUTABLE, MPI_*): a test
that needs mpirun is registered with olmo_mpi_py_test, which registers a visible skip where
CMake found no MPI. Names built from variables (${...}) are not checked.
Usage: check_registered.py SOURCE_DIR BUILD_DIR CTEST. Standard library only; exit 0 = pass.
"""
import glob
import os
import re
import subprocess
import sys

CALL = re.compile(r"^\s*(olmo_py_test|olmo_mpi_py_test|olmo_cli_test|add_test|olmo_fuzz_target)"
                  r"\(\s*(?:NAME\s+)?([^\s)]+)")
IF = re.compile(r"^\s*if\s*\((.*)\)")
ENDIF = re.compile(r"^\s*endif\s*\(")
FUNC = re.compile(r"^\s*(function|endfunction)\s*\(")
MPI_COND = re.compile(r"\bMPI(EXEC_EXECUTABLE|_\w*FOUND)\b")


def registered(source):
    """({name: 'file:line'}, [problems]) of the registrations in the source tree."""
    names, problems = {}, []
    tests = os.path.join(source, "tests")
    for src in sorted(glob.glob(os.path.join(tests, "*", "*_test.cpp"))):
        area = os.path.basename(os.path.dirname(src))
        names[f"{area}_{os.path.basename(src)[:-len('_test.cpp')]}"] = os.path.relpath(src, source)
    files = [os.path.join(tests, "CMakeLists.txt")] + sorted(
        glob.glob(os.path.join(tests, "*", "*.cmake")))
    for path in files:
        rel = os.path.relpath(path, source)
        conds, in_func = [], False
        for no, line in enumerate(open(path), 1):
            code = line.split("#", 1)[0]
            f = FUNC.match(code)
            if f:
                in_func = f.group(1) == "function"
                continue
            m = IF.match(code)
            if m:
                conds.append(m.group(1))
                continue
            if ENDIF.match(code):
                if conds:
                    conds.pop()
                continue
            c = CALL.match(code)
            if not c or in_func or c.group(2).startswith("NAME"):
                continue
            kind, name = c.groups()
            if "${" in name:
                continue
            if kind == "olmo_fuzz_target":
                name = f"fuzz_replay_{name}"
            names[name] = f"{rel}:{no}"
            if any(MPI_COND.search(x) for x in conds):
                problems.append(f"{rel}:{no}: {name} is registered only where CMake finds MPI: "
                                "register it with olmo_mpi_py_test (a visible skip without MPI)")
    return names, problems


def listed(build, ctest):
    p = subprocess.run([ctest, "-N"], cwd=build, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        sys.exit(f"meta_registered: `ctest -N` in {build} failed ({p.returncode}): {p.stderr}")
    return set(re.findall(r"^\s*Test\s+#\d+:\s+(\S+)\s*$", p.stdout, re.M))


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__.strip().splitlines()[-2])
    source, build, ctest = sys.argv[1:]
    names, problems = registered(source)
    have = listed(build, ctest)
    problems += [f"{where}: {name} is registered in the source tree but missing from `ctest -N`"
                 for name, where in sorted(names.items()) if name not in have]
    for p in problems:
        print("FAIL", p)
    print(f"meta_registered: {len(names)} test names registered under tests/, {len(have)} in "
          f"`ctest -N`, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
