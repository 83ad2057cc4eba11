#!/usr/bin/env python3
"""meta_pytests: the Python tests use the shared helpers of tests/lib (olmo_test) instead of
their own copies. Fails naming FILE:LINE for each Python file under tests/ (tests/lib excepted)
that
  - edits sys.path (sys.path.insert / append / extend / assignment / +=): the import path comes
    from PYTHONPATH, set by olmo_py_test in tests/CMakeLists.txt;
  - defines a function named check or fail (at any depth): olmo_test.check / fail is the suite's
    one failure convention (prints ok / FAIL, records, finish() exits 1). The suite's tools
    tests/check_*.py (not tests; they run with the system python before the venv) may name a
    function check.
Before the tree it checks planted files (one of each kind, and a clean one) and fails when it
does not flag exactly the planted problems. Standard library only.
Usage: check_pytests.py SOURCE_DIR
"""
import ast
import os
import sys
import tempfile


def problems_of(path, rel, tool):
    with open(path, encoding="utf-8") as f:
        src = f.read()
    try:
        tree = ast.parse(src, path)
    except SyntaxError as e:
        return [f"{rel}:{e.lineno}: does not parse: {e.msg}"]
    out = []

    def is_sys_path(n):
        return (isinstance(n, ast.Attribute) and n.attr == "path" and isinstance(n.value, ast.Name)
                and n.value.id == "sys")

    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) \
                and is_sys_path(n.func.value) and n.func.attr in ("insert", "append", "extend"):
            out.append(f"{rel}:{n.lineno}: sys.path.{n.func.attr}(): tests get their import path "
                       f"from PYTHONPATH (olmo_py_test), not by editing sys.path")
        elif isinstance(n, (ast.Assign, ast.AugAssign)):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            for t in targets:
                if is_sys_path(t) or (isinstance(t, ast.Subscript) and is_sys_path(t.value)):
                    out.append(f"{rel}:{n.lineno}: assigns sys.path: tests get their import path "
                               f"from PYTHONPATH (olmo_py_test)")
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and n.name in ("check", "fail") and not tool:
            out.append(f"{rel}:{n.lineno}: defines its own {n.name}(): use olmo_test.check / "
                       f"fail / finish (tests/lib)")
    return out


def scan(tests_dir):
    found = []
    for dirpath, dirnames, files in os.walk(tests_dir):
        rel_dir = os.path.relpath(dirpath, tests_dir)
        if rel_dir == "lib" or rel_dir.startswith("lib" + os.sep):
            dirnames[:] = []
            continue
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            rel = os.path.normpath(os.path.join("tests", rel_dir, name))
            tool = rel_dir == "." and name.startswith("check_")
            found += problems_of(os.path.join(dirpath, name), rel, tool)
    return found


def self_test():
    """The scan flags the planted sys.path edits and check() definitions, and nothing else."""
    with tempfile.TemporaryDirectory(prefix="olmo_meta_pytests_") as t:
        planted = {
            "a/bad_path_test.py": "import os, sys\nsys.path.insert(0, os.path.dirname(__file__))\n",
            "a/bad_append.py": "import sys\nsys.path.append('x')\nsys.path[:0] = ['y']\n",
            "b/bad_check_test.py": "def main():\n    def check(c, m):\n        pass\n"
                                   "def fail(m):\n    pass\n",
            "b/good_test.py": "import sys\nfrom olmo_test import check, finish\n"
                              "print(sys.argv, sys.path)\ncheck(True, 'x')\nfinish('good')\n",
            "lib/olmo_test/x.py": "import sys\nsys.path.insert(0, '.')\ndef check():\n    pass\n",
            "check_tool.py": "def check(root):\n    return []\n",
        }
        for rel, body in planted.items():
            os.makedirs(os.path.join(t, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(t, rel), "w") as f:
                f.write(body)
        got = sorted(p.split(": ")[0] for p in scan(t))
        want = ["tests/a/bad_append.py:2", "tests/a/bad_append.py:3",
                "tests/a/bad_path_test.py:2", "tests/b/bad_check_test.py:2",
                "tests/b/bad_check_test.py:4"]
        if got != want:
            print(f"meta_pytests self-test FAILED: planted {want}, flagged {got}")
            return False
    return True


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    if not self_test():
        return 1
    problems = scan(os.path.join(sys.argv[1], "tests"))
    for p in problems:
        print(p)
    if problems:
        print(f"meta_pytests: {len(problems)} problem(s): Python tests must use tests/lib's "
              f"olmo_test (tests/README.md, \"tests/lib\")")
        return 1
    print("meta_pytests: no Python file under tests/ edits sys.path or defines its own "
          "check() / fail()")
    return 0


if __name__ == "__main__":
    sys.exit(main())
