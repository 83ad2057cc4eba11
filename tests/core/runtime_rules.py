"""Issue 36 item 2: source rules of the one Runtime (src/core/runtime.h).

  runtime_rules.py getenv         -- no file under src/ or cli/ reads the process environment
                                     (getenv, secure_getenv, environ) except src/core/runtime.cpp:
                                     every setting goes through core/runtime.h.
  runtime_rules.py kernel_prints  -- no file under src/kernels prints (printf, fprintf, puts,
                                     fputs, perror, std::cout/cerr/clog, write to fd 1/2): kernels
                                     return their picks and reasons; the caller reports them.

Each violation is named FILE:LINE with the line. Comments, string and character literals are
ignored (a comment may name getenv). Before the real tree, each rule checks itself on a planted
tree (a scanner that misses the planted violation, or flags the planted allowed code, fails).
Env: OLMO_SOURCE_DIR (the repository root; default: two levels above this file). Standard library
only. Registered in tests/core/runtime.cmake as core_no_getenv and core_kernels_no_print."""
import os
import re
import sys
import tempfile

ROOT = os.environ.get("OLMO_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
EXTS = (".cpp", ".h", ".cc", ".hpp", ".c")

RULES = {
    "getenv": {
        "dirs": ["src", "cli"],
        "exempt": {os.path.join("src", "core", "runtime.cpp")},
        "pattern": re.compile(r"\b(secure_getenv|getenv|getenv_s|_dupenv_s|environ)\b"),
        "what": "reads the environment",
        "fix": "read it through core/runtime.h (runtime().env(\"NAME\"), declared in "
               "src/core/runtime.cpp's kDeclared table)",
        "bad": {"src/train/a.cpp": 'int x;\nconst char* e = std::getenv("OLMO_X");\n',
                "cli/b.cpp": "extern char** environ;\n",
                "src/launch/c.cpp": 'auto v = secure_getenv("A");\n',
                "src/data/d.h": 'for (char** e = ::environ; *e; ++e) {}\n'},
        "good": {"src/core/runtime.cpp": 'std::getenv("X"); extern char** environ;\n',
                 "src/train/e.cpp": '// std::getenv("X") is not called here\n'
                                    '/* getenv( */ auto s = "getenv(\\"X\\")";\n'
                                    'auto env = runtime().env("OLMO_X"); int environment = 0;\n'},
    },
    "kernel_prints": {
        "dirs": [os.path.join("src", "kernels")],
        "exempt": set(),
        "pattern": re.compile(r"\b(printf|fprintf|vfprintf|vprintf|puts|fputs|putchar|perror|"
                              r"cout|cerr|clog|std::print|std::println)\b|"
                              r"\bwrite\s*\(\s*(1|2|STDOUT_FILENO|STDERR_FILENO)\s*,"),
        "what": "prints from a kernel",
        "fix": "return the result and its reason; the caller (src/train) records it in "
               "core/runtime.h and prints it",
        "bad": {"src/kernels/a.cpp": 'x();\nstd::fprintf(stderr, "%s\\n", why.c_str());\n',
                "src/kernels/b.cpp": 'std::cerr << "probe";\n',
                "src/kernels/c.cpp": 'puts("x");\n',
                "src/kernels/d.cpp": 'write(2, buf, n);\n'},
        "good": {"src/kernels/e.cpp": 'std::snprintf(buf, sizeof buf, "%d", 1);\n'
                                      '// printed once to stderr by the caller: fprintf(...)\n'
                                      'auto s = "printf(";  vsnprintf(b, 1, f, a);\n'
                                      'f.write(p, n); rewrite(2, x);\n'},
    },
}

# Comments and literals, matched left to right in one pass (a "/*" inside a string is no comment).
TOKENS = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def blank(m):
    t = m.group(0)
    return '""' if t[0] in "\"'" else "\n" * t.count("\n")


def code_lines(text):
    """(line number, code) with comments and string/char literals blanked (lines kept)."""
    return enumerate(TOKENS.sub(blank, text).split("\n"), 1)


def scan(root, rule):
    hits = []
    for top in rule["dirs"]:
        for dirpath, _, files in sorted(os.walk(os.path.join(root, top))):
            for f in sorted(files):
                if not f.endswith(EXTS):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, f), root)
                if rel in rule["exempt"]:
                    continue
                with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as fh:
                    raw = fh.read()
                src = raw.split("\n")
                for n, code in code_lines(raw):
                    if rule["pattern"].search(code):
                        hits.append((rel, n, src[n - 1].strip()))
    return hits


def self_check(name, rule):
    """The rule on a planted tree: every bad file flagged at its line, no good file flagged."""
    with tempfile.TemporaryDirectory() as tmp:
        for rel, text in {**rule["bad"], **rule["good"]}.items():
            os.makedirs(os.path.join(tmp, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(tmp, rel), "w") as f:
                f.write(text)
        hits = scan(tmp, rule)
    flagged = {h[0] for h in hits}
    missed = [r for r in rule["bad"] if r not in flagged]
    over = [h for h in hits if h[0] in rule["good"]]
    assert not missed, f"{name}: the scanner misses the planted {missed}"
    assert not over, f"{name}: the scanner flags allowed code {over}"
    want_line = rule["bad"][sorted(rule["bad"])[0]].count("\n")  # each bad file: its last line
    got = [h for h in hits if h[0] == sorted(rule["bad"])[0]]
    assert got and got[0][1] == want_line, f"{name}: wrong line number {got}"


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in RULES:
        print(f"usage: {sys.argv[0]} {'|'.join(RULES)}")
        return 2
    name = sys.argv[1]
    rule = RULES[name]
    self_check(name, rule)
    hits = scan(ROOT, rule)
    for rel, n, line in hits:
        print(f"FAIL {rel}:{n}: {rule['what']}: {line}\n     {rule['fix']}")
    if hits:
        return 1
    print(f"OK: {name}: nothing under {', '.join(rule['dirs'])} {rule['what']}"
          + (f" (outside {', '.join(sorted(rule['exempt']))})" if rule["exempt"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
