"""README.md's and the docs/ pages' speed figures point at their record: every speed /
throughput figure quoted in README.md or in a docs/ page that holds README's former sections
(DOCS below) must appear in a bench/ results file that its paragraph names, and the paragraph
must name the command that produced it.

A unit is a paragraph, a list item or a table row of a page outside fenced code blocks (those
are transcripts printed by the command above them); a table row also sees the paragraph just
before its table. Speed figures (FIGURE below): N tokens/s, tok/s, query tokens/s, GFLOP/s (both
figures of "A vs B tokens/s"), N% MFU / MFU N%, N% of the (FMA) peak, N% of the
tokens/s, N% (bf16|fp32) of the peak, speed ratios N.Nx, mfu=N% and torch_ratio=N. Rules and
targets are no figures: ">= 1.1x", "a 1.1x lr multiplier" and a "Not reached: ..." sentence are
skipped. Not caught: a
bare percentage without one of those phrasings (the "(58% before this CPU's tuning)" and "71%"
of the known-gaps attention note: docs/readme_claims.md lists them).
Sources (SOURCE): bench/RESULTS.md, bench/results/FILE, or bench/results/DIR/ (its .md files).
Commands (COMMAND): bench/*.sh|py, `olmo bench ...`, `make demo`, scripts/*.sh|py, bench_*
binaries (required where a unit quotes a recorded figure). A figure matches when its number (commas removed) is a number in a named source; a range A-B
also when A and B both are.
UNRECORDED lists the figures that no file under bench/ records (each with its README text,
printed as a NOT RECORDED line and listed in docs/readme_claims.md); an entry whose text is no
longer in README.md fails the test, so the list can only shrink.
Seen red: removing "bench/results/decode.md" from the decode-speed line, and changing a figure
("110 vs 43" -> "111 vs 43"), each fail it (in README.md, and again once the line moved to
docs/interop.md); a DOCS entry naming a missing page fails it.
Usage: readme_figures_test.py [SOURCE_DIR] (default OLMO_SOURCE_DIR or the repo root). < 1 s.
"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.environ.get(
    "OLMO_SOURCE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

NUM = r"\d[\d,]*(?:\.\d+)?(?:-\d[\d,]*(?:\.\d+)?)?"
FIGURE = re.compile(
    rf"({NUM})\s*(?:s\s+)?vs\.?\s+({NUM})\s*(?:query )?(?:tokens/s|tok/s|GFLOP/s)"
    rf"|({NUM})\s*(?:query )?(?:tokens/s|tok/s|GFLOP/s)"
    rf"|({NUM})%\s*MFU|MFU\s*(?:of\s*)?({NUM})%"
    rf"|({NUM})% of (?:the |this CPU's )?(?:FMA )?(?:peak|tokens/s)"
    rf"|({NUM})% \((?:bf16|fp32)\)"
    rf"|(?<![\d.])(\d+\.\d+(?:-\d+\.\d+)?)x\b"
    rf"|mfu=({NUM})%|torch_ratio=({NUM})")
NOT_FIGURES = [re.compile(r">=\s*\d+(?:\.\d+)?x"), re.compile(r"Not reached:.*?\.(?:\s|$)"),
               re.compile(r"\d+(?:\.\d+)?x lr\b")]  # an LR multiplier, not a speed
SOURCE = re.compile(r"bench/results/[\w./-]*[\w/]|bench/RESULTS\.md")
COMMAND = re.compile(r"bench/\w+\.(?:sh|py)|olmo bench|make demo|scripts/\w+\.(?:sh|py)|bench_\w+")

# The docs/ pages the README's sections moved to (they quote speed figures too). Not here:
# readme_claims.md (an inventory quoting the figures it lists), config.md (generated),
# ARCHITECTURE.md, monitoring.md, olmo_eval.md, launch_security.md and slurm/ (no speed figures).
DOCS = ["training.md", "data.md", "distributed.md", "evaluation.md", "interop.md",
        "benchmarks.md", "testing.md", "troubleshooting.md", "dependencies.md"]

# (figure, text of its README / docs unit, why no bench/ file records it)
UNRECORDED = [
    ("436", "slowed it to a median 436 tokens/s",
     "the 2026-12-03 `make demo` run's own log (runs/demo, not kept in git)"),
    ("2,300", "the ~2,300 tokens/s of an idle machine", "the same demo run's note"),
    ("34.7", "bf16 peak measured 34.7 GFLOP/s", "that demo run's start-up peak line"),
    ("345", "345 vs 74 GFLOP/s", "the auto-precision probe line on a Sapphire Rapids host "
     "(README commit c726644, issue 18 review); no bench/ file"),
    ("74", "345 vs 74 GFLOP/s", "same probe line"),
    ("4.7", "74 GFLOP/s, 4.7x", "same probe line"),
    ("1.6-2.0", "bf16 GEMM 1.6-2.0x", "Zen 4 probe lines (README commit 7d0378a)"),
    ("11.9", "the 30-doc run on a Xeon read 11.9x", "an earlier olmo_eval_bench.sh run"),
    ("12.8", "13.7 s vs 176.4 s, 12.8x", "the full-set (74 labels) run; not in olmo_eval.md"),
    ("78-86", "fp32 matmul at 78-86% of this CPU's FMA peak",
     "the BLAS comparison made when oneDNN was chosen (2026-12-02, Intel Xeon); no bench/ file"),
]


def units(text):
    """[(line, text, context)]: paragraphs, list items and table rows outside code fences."""
    out, cur, start, fence, prev_para = [], [], 0, False, ""

    def flush():
        nonlocal cur, prev_para
        if cur:
            t = " ".join(cur)
            out.append((start, t, ""))
            prev_para = t
        cur = []

    for i, line in enumerate(text.split("\n"), 1):
        if line.startswith("```"):
            flush()
            fence = not fence
            continue
        if fence:
            continue
        s = line.strip()
        if not s or s.startswith("|") or s.startswith("- ") or s.startswith("#"):
            flush()
        if not s:
            continue
        if s.startswith("|"):
            out.append((i, s, prev_para))
            continue
        if not cur:
            start = i
        cur.append(s)
        if s.startswith("#"):
            flush()
    flush()
    return out


def numbers(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        t = f.read().replace(",", "")
    return set(re.findall(r"\d+(?:\.\d+)?(?:-\d+(?:\.\d+)?)?", t)) | set(re.findall(r"\d+(?:\.\d+)?", t))


def source_files(paths):
    files = []
    for p in paths:
        full = os.path.join(ROOT, p)
        if os.path.isdir(full):
            files += [os.path.join(full, f) for f in sorted(os.listdir(full)) if f.endswith(".md")]
        elif os.path.isfile(full):
            files.append(full)
    return files


def check_file(rel, fails, unrecorded_seen):
    """Checks one Markdown file's units; returns (figures, units with figures)."""
    text = open(os.path.join(ROOT, rel), encoding="utf-8").read()
    n_fig, n_units = 0, 0
    for line, unit, context in units(text):
        body = unit
        for pat in NOT_FIGURES:
            body = pat.sub(" ", body)
        figs = [g for m in FIGURE.finditer(body) for g in m.groups() if g]
        if not figs:
            continue
        n_units += 1
        srcs = SOURCE.findall(unit) or SOURCE.findall(context)
        files = source_files(srcs)
        have = set().union(*(numbers(f) for f in files)) if files else set()
        missing = [p for p in srcs if not source_files([p])]
        if missing:
            fails.append(f"{rel}:{line}: names {missing}, which do not exist")
        recorded = [f for f in figs if not any(u[0] == f and u[1] in unit for u in UNRECORDED)]
        if recorded and not COMMAND.search(unit) and not COMMAND.search(context):
            fails.append(f"{rel}:{line}: speed figures {figs} but no command "
                         f"(bench/*.sh|py, olmo bench, make demo, scripts/...): {unit[:100]!r}")
        for fig in figs:
            n_fig += 1
            exempt = [u for u in UNRECORDED if u[0] == fig and u[1] in unit]
            if exempt:
                unrecorded_seen.add(exempt[0][:2])
                print(f"NOT RECORDED {rel}:{line}: {fig} ({exempt[0][1]!r}): {exempt[0][2]}")
                continue
            if not files:
                fails.append(f"{rel}:{line}: figure {fig} but the paragraph names no bench "
                             f"results file: {unit[:100]!r}")
            elif fig.replace(",", "") not in have and not (
                    "-" in fig and all(x in have for x in fig.replace(",", "").split("-"))):
                fails.append(f"{rel}:{line}: figure {fig} is not in {srcs}")
            else:
                print(f"ok   {rel}:{line}: {fig} in {', '.join(srcs)}")
    return n_fig, n_units


def main():
    fails, n_fig, n_units = [], 0, 0
    unrecorded_seen = set()
    pages = ["README.md"] + [os.path.join("docs", d) for d in DOCS]
    for rel in pages:
        if not os.path.isfile(os.path.join(ROOT, rel)):
            fails.append(f"{rel}: listed in DOCS but missing")
            continue
        f, u = check_file(rel, fails, unrecorded_seen)
        n_fig, n_units = n_fig + f, n_units + u
    for fig, snippet, _ in UNRECORDED:
        if (fig, snippet) not in unrecorded_seen:
            fails.append(f"UNRECORDED entry ({fig}, {snippet!r}) no longer matches README.md or "
                         "docs/: drop it")
    print(f"{n_fig} speed figures in {n_units} units of {len(pages)} pages")
    for f in fails:
        print("FAIL", f)
    if fails:
        sys.exit(1)
    print("readme_figures_test: OK")


if __name__ == "__main__":
    main()
