"""The demo's duration is quoted in one place (issue 48): README.md's paragraph on `make demo`
(the one with "Duration of the training part") holds the measured figures; every other paragraph
of README.md, docs/**/*.md, configs/*.yaml (comments and descriptions), the Makefile and the demo
scripts that speaks of the demo and quotes a duration in minutes must quote one of README's
figures (or point at README.md instead of quoting one). A unit is a paragraph, a list item or a
table row, split at ';' and table cells (a table row of docs/readme_claims.md lists the demo's and CI's figures
side by side); it speaks of the demo when it contains "demo" ending a word (demo, the demo's, run_demo.sh, demo.yaml; not olmo_core_demo.sh,
OLMo-core's reference run, nor fault_demo.yaml). A duration: "N min", "N minutes", "~N min",
"N-M minutes", "N and M minutes".
Seen red: configs/demo.yaml's former "about 15 minutes" / "~15 minutes on 2 cores" (README: 11.5,
41, 80) fail it, naming the file and line.
Usage: demo_time_test.py [SOURCE_DIR] (default OLMO_SOURCE_DIR). < 1 s.
"""
import glob
import os
import re
import sys

from olmo_test import SRC, check, finish

ROOT = sys.argv[1] if len(sys.argv) > 1 else SRC
MINUTES = re.compile(r"~?(\d+(?:\.\d+)?)(?:\s*(?:-|and|or|/)\s*(\d+(?:\.\d+)?))?\s*"
                     r"(?:min\b|minutes\b)")
DEMO = re.compile(r"demo\b", re.I)  # demo, the demo's, run_demo.sh, configs/demo.yaml


def units(path):
    """(line, text) units of a file: paragraphs / list items / table rows (Markdown), comment
    paragraphs and description values (YAML, shell, Makefile), each split at ';'."""
    lines = open(path, encoding="utf-8").read().split("\n")
    md = path.endswith(".md")
    out, buf, start, fenced = [], [], 0, False
    for i, line in enumerate(lines, 1):
        if md and line.strip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        text = line if md else (line.split("#", 1)[1] if "#" in line else
                                line if re.match(r"^\s*description:", line) else "")
        new_unit = (not text.strip() or (md and re.match(r"^\s*([-*|]|\d+\.)\s", text)))
        if new_unit and buf:
            out.append((start, " ".join(buf)))
            buf = []
        if text.strip():
            if not buf:
                start = i
            buf.append(text.strip())
    if buf:
        out.append((start, " ".join(buf)))
    return out


def parts(text):
    """A unit split at ';' and at table cell borders '|'."""
    return [p for p in re.split(r"[;|]", text) if p.strip()]


def figures(text):
    return {m.group(0) and float(x) for m in MINUTES.finditer(text) for x in m.groups() if x}


def main():
    readme = os.path.join(ROOT, "README.md")
    ref = figures(" ".join(t for _, t in units(readme) if "Duration of the training part" in t))
    check(ref, "README.md quotes the demo's duration (the 'Duration of the training part' "
          "paragraph)", sorted(ref))
    files = ([readme] + sorted(glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))
             + sorted(glob.glob(os.path.join(ROOT, "configs", "*.yaml")))
             + [os.path.join(ROOT, f) for f in ("Makefile", "scripts/run_demo.sh",
                                                "scripts/make_demo_data.sh")])
    seen = 0
    for path in files:
        rel = os.path.relpath(path, ROOT)
        for ln, text in ((ln, p) for ln, t in units(path) for p in parts(t)):
            if not DEMO.search(text.replace("olmo_core_demo", "").replace("fault_demo", "")):
                continue
            got = figures(text)
            if not got:
                continue
            seen += 1
            check(got <= ref, f"{rel}:{ln}: demo duration {sorted(got)} min is README's",
                  "" if got <= ref else f"README.md quotes {sorted(ref)}: quote one of them or "
                  f"point at README.md; text: {text[:200]}")
    check(seen >= 1, f"{seen} demo duration quotes checked")
    finish("demo_time")


if __name__ == "__main__":
    main()
