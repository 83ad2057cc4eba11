"""Issue 36 item 4: one way to publish a file. No C++ file outside src/core renames a file or a
directory (rename, renameat, std::filesystem::rename) or opens a file for a truncating write
(fopen "w", O_TRUNC, std::ofstream without std::ios::app): user-visible outputs go through
src/core/file_io.h (write_file_atomic, AtomicFile, publish_dir), which writes a temporary in the
same directory, fsyncs it, renames it and fsyncs the directory.

Appending to a log (fopen "a", std::ios::app) is not a rewrite and is allowed. The allow-list
below names the files that open a file for writing in place, with the reason; an entry that no
longer matches anything fails too (the list must not go stale).
Env: OLMO_SOURCE_DIR (the repository root; default: two levels above this file)."""
import os
import re
import sys

ROOT = os.environ.get("OLMO_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
DIRS = ["src", "cli"]
EXEMPT_DIR = os.path.join("src", "core")  # the helper itself

PATTERNS = {
    "rename": re.compile(r"(\brename(at2?)?\s*\()|(filesystem::rename\b)|(\bfs::rename\b)"),
    "truncating write": re.compile(
        r"(fopen\s*\(.*\"w[b+]*\")|(\bO_TRUNC\b)|(\bstd::(o|)fstream\b(?!\s*&)(?!.*ios::app))"),
}

# (file, kind) -> why it writes a file in place.
ALLOWED = {
    ("src/ckpt/checkpoint_detail.h", "truncating write"):
        "files inside the stepN-tmp staging directory; the directory is published whole by "
        "core publish_dir",
    ("src/ckpt/checkpoint_writer.cpp", "truncating write"):
        "tensors-RRRRR.bin inside the stepN-tmp staging directory (published by publish_dir)",
    ("src/train/tfevents.cpp", "truncating write"):
        "a new TensorBoard event file, an append-only stream read live by TensorBoard (its "
        "rewrite on resume goes through write_file_atomic)",
}


def strip_comment(line):
    i = line.find("//")
    return line if i < 0 else line[:i]


def scan(root):
    hits = []
    for top in DIRS:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            rel_dir = os.path.relpath(dirpath, root)
            if rel_dir == EXEMPT_DIR or rel_dir.startswith(EXEMPT_DIR + os.sep):
                continue
            for f in sorted(files):
                if not f.endswith((".cpp", ".h", ".cc", ".hpp")):
                    continue
                rel = os.path.join(rel_dir, f)
                with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as fh:
                    for n, line in enumerate(fh, 1):
                        code = strip_comment(line)
                        for kind, rx in PATTERNS.items():
                            if rx.search(code):
                                hits.append((rel, n, kind, line.strip()))
    return hits


def self_check():
    """The patterns catch what they are meant to (a regex that matches nothing passes anything)."""
    bad = ['if (::rename(tmp.c_str(), p.c_str()) != 0)', 'std::rename(a, b);',
           'std::filesystem::rename(a, b);', 'fs::rename(a, b, ec);', 'renameat2(0, a, 0, b, 0);',
           'FILE* f = std::fopen(out.c_str(), "wb");', 'open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644)',
           'std::ofstream f(path);']
    good = ['std::ofstream f(path, std::ios::app);', 'f_ = std::fopen(path.c_str(), "ab");',
            'void write_raw(std::ofstream& f);', 'rename_column(x);', 'std::fopen(p.c_str(), "rb")']
    for s in bad:
        assert any(rx.search(s) for rx in PATTERNS.values()), f"pattern misses: {s}"
    for s in good:
        assert not any(rx.search(s) for rx in PATTERNS.values()), f"pattern over-matches: {s}"


def main():
    self_check()
    hits = scan(ROOT)
    bad = [h for h in hits if (h[0], h[2]) not in ALLOWED]
    used = {(h[0], h[2]) for h in hits}
    stale = [k for k in ALLOWED if k not in used]
    for rel, n, kind, line in bad:
        print(f"FAIL {rel}:{n}: hand-rolled {kind}: {line}\n"
              f"     publish the file with core/file_io.h (write_file_atomic / AtomicFile / "
              f"publish_dir), or allow-list it in {__file__} with a reason")
    for rel, kind in stale:
        print(f"FAIL allow-list entry ({rel}, {kind}) matches nothing any more: remove it")
    for (rel, kind), why in sorted(ALLOWED.items()):
        if (rel, kind) in used:
            print(f"allowed {kind} in {rel}: {why}")
    if bad or stale:
        return 1
    print(f"OK: no hand-rolled rename or in-place write outside src/core ({len(hits)} allowed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
