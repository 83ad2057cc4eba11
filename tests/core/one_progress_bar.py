#!/usr/bin/env python3
"""Issue 38 item 7: one progress-bar implementation. No C++ file under src/ or cli/ draws a line
in place except src/core/progress_bar.cpp (core's ProgressBar, which every long command uses).
Drawing in place is recognised in string and character literals (comments are ignored):
  - a literal that starts with a carriage return, "\\r..." (a redraw), other than "\\r\\n";
  - a '\\r' character written with fputc / putc / putchar / << ;
  - the ANSI erase-line sequence (ESC "[K" or "[2K", written \\033, \\x1b or \\e).
A parser comparing characters with '\\r' or a literal holding "\\r\\n" in the middle is not drawing.
Before the real tree it checks itself on a planted hand-drawn bar: a checker that misses it fails.
Usage: one_progress_bar.py SOURCE_DIR (exit 0: none; 1: each drawing site named FILE:LINE).
Registered as the ctest test meta_one_progress_bar. Standard library only.
"""
import os
import re
import sys
import tempfile

DIRS = ["src", "cli"]
ALLOWED = os.path.join("src", "core", "progress_bar.cpp")
ERASE = re.compile(r"(\\033|\\x1[bB]|\\e)\[2?K")
PUT_CR = re.compile(r"\b(fputc|putc|putchar)\s*\(\s*'\\r'|<<\s*'\\r'")


def literals(line):
    """([(quote, body)] of the line's string and char literals as written in the source, the
    line without its // comment)."""
    out, i, n = [], 0, len(line)
    while i < n:
        c = line[i]
        if c == "/" and line.startswith("//", i):
            return out, line[:i]
        if c in "\"'":
            j, body = i + 1, []
            while j < n and line[j] != c:
                if line[j] == "\\" and j + 1 < n:
                    body.append(line[j:j + 2])
                    j += 2
                    continue
                body.append(line[j])
                j += 1
            out.append((c, "".join(body)))
            i = j + 1
            continue
        i += 1
    return out, line


def drawing(line):
    lits, code = literals(line)
    for quote, body in lits:
        if quote == "\"" and body.startswith("\\r") and not body.startswith("\\r\\n"):
            return "a literal starting with \\r (redraw in place)"
        if ERASE.search(body):
            return "the ANSI erase-line sequence"
    if PUT_CR.search(code):
        return "a '\\r' written out"
    return None


def scan(root):
    hits = []
    for top in DIRS:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith((".cpp", ".h", ".cc", ".hpp")):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, f), root)
                if rel == ALLOWED:
                    continue
                with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as fh:
                    for n, line in enumerate(fh, 1):
                        why = drawing(line)
                        if why:
                            hits.append(f"{rel}:{n}: {why}: {line.strip()}")
    return hits


def self_test():
    """The checker finds planted bars and passes parsers' '\\r' comparisons."""
    planted = {
        "src/corpus/bar.cpp": '  std::fprintf(stderr, "\\r[%s] %5.1f%%", b, p);\n',
        "cli/x.cpp": '  std::fputc(\'\\r\', stderr);\n',
        "src/train/y.cpp": '  std::fputs("\\033[K", stderr);  // erase\n',
    }
    clean = {
        "src/corpus/ok.cpp": "  if (c == '\\r') continue;  // fputs(\"\\r\") in a comment\n"
                             '  s.find_first_of(",\\"\\r\\n");\n  std::printf("a\\r\\nb");\n',
        ALLOWED: '  std::fputc(\'\\r\', out);\n',
    }
    with tempfile.TemporaryDirectory() as d:
        for rel, text in {**planted, **clean}.items():
            os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
            with open(os.path.join(d, rel), "w") as f:
                f.write(text)
        hits = scan(d)
    found = {h.split(":", 1)[0] for h in hits}
    ok = found == set(planted)
    if not ok:
        print(f"self-test FAILED: planted {sorted(planted)}, found {hits}")
    return ok


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    if not self_test():
        return 1
    hits = scan(root)
    for h in hits:
        print(h)
    if hits:
        print(f"FAIL: {len(hits)} place(s) draw a progress line by hand; use core/progress_bar.h")
        return 1
    print("ok: only src/core/progress_bar.cpp draws in place")
    return 0


if __name__ == "__main__":
    sys.exit(main())
