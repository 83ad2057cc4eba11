"""meta_check_skips: tests/check_skips.py on real ctest JUnit reports (a scratch CMake project
in a temp dir whose tests skip with exit 77 or are DISABLED), each case one report:
  absent      a skip naming one missing file                     -> accepted (exit 0)
  disabled    a test with the DISABLED property                   -> refused (exit 1)
  one_of_two  a skip naming a missing file and a present one (/tmp)  -> refused: every prerequisite
              named must be absent, not only the first that matches
  unexplained a skip that names no prerequisite                   -> refused
  part        a passing test announcing "NOT RUN here: <missing file> missing" -> accepted
Standard library + cmake/ctest on PATH (the build's own); measured ~2 s.
"""
import os
import shutil
import subprocess
import sys
import tempfile

from olmo_test import SRC, check, finish

MISSING = "/nonexistent/olmo_skipcheck/tokenizer.json"
CASES = {  # name -> (CMake lines of the scratch project's test, check_skips exit wanted)
    "absent": (f'add_test(NAME t COMMAND sh -c "echo SKIPPED: {MISSING} missing; exit 77")\n'
               "set_tests_properties(t PROPERTIES SKIP_RETURN_CODE 77)", 0),
    "disabled": ('add_test(NAME t COMMAND sh -c "exit 0")\n'
                 "set_tests_properties(t PROPERTIES DISABLED TRUE)", 1),
    "one_of_two": (f'add_test(NAME t COMMAND sh -c "echo SKIPPED: {MISSING} missing, /tmp missing; '
                   'exit 77")\nset_tests_properties(t PROPERTIES SKIP_RETURN_CODE 77)', 1),
    "unexplained": ('add_test(NAME t COMMAND sh -c "echo SKIPPED: not today; exit 77")\n'
                    "set_tests_properties(t PROPERTIES SKIP_RETURN_CODE 77)", 1),
    "part": (f'add_test(NAME t COMMAND sh -c "echo NOT RUN here: {MISSING} missing; exit 0")', 0),
}


def report(tmp, name, body):
    src, build = os.path.join(tmp, name), os.path.join(tmp, name, "build")
    os.makedirs(build)
    with open(os.path.join(src, "CMakeLists.txt"), "w") as f:
        f.write(f"cmake_minimum_required(VERSION 3.20)\nproject(skipcheck NONE)\nenable_testing()\n"
                f"{body}\n")
    subprocess.run(["cmake", "-S", src, "-B", build], check=True, capture_output=True)
    subprocess.run(["ctest", "--output-junit", "junit.xml"], cwd=build, capture_output=True)
    return os.path.join(build, "junit.xml")


def main():
    tmp = tempfile.mkdtemp(prefix="olmo_skipcheck_")
    try:
        for name, (body, want) in CASES.items():
            junit = report(tmp, name, body)
            p = subprocess.run([sys.executable, os.path.join(SRC, "tests", "check_skips.py"),
                                "--source", SRC, junit], capture_output=True, text=True)
            # Its output only on a failure: it quotes the planted skip lines, which the real
            # check_skips run over this suite's report would take for this test's own.
            check(p.returncode == want, f"{name}: check_skips exit {p.returncode}, want {want}",
                  p.stdout.strip() if p.returncode != want else "")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish("meta_check_skips")


if __name__ == "__main__":
    main()
