"""Issue 36 item 1: the checkpoint's on-disk layout is known only to src/ckpt.

No file under src/ or cli/ outside src/ckpt/ names a file of the checkpoint layout as a path:
a string literal that is exactly one of its names ("COMMITTED", "state.json", "index.json",
"tensors-00000.bin", "shard-00001.json", optionally with a leading "/"). Messages that mention
the marker in prose ("no COMMITTED marker: ...") are allowed; code asks src/ckpt instead
(ckpt::is_committed, looks_like_checkpoint, state_file, list_checkpoints, the readers/writers).
Each violation is printed as FILE:LINE with the line; exit 1 if any. Before the real tree the rule
checks itself on a planted tree. Env: OLMO_SOURCE_DIR (default: two levels above this file).
Registered in tests/ckpt/layout.cmake as ckpt_layout_only_in_ckpt."""
import os
import re
import sys
import tempfile

ROOT = os.environ.get("OLMO_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
EXTS = (".cpp", ".h", ".cc", ".hpp")
NAMES = r"COMMITTED|state\.json|index\.json|tensors-\d+\.bin|shard-\d+\.json"
# A literal that is exactly a layout name (a leading "/" allowed), e.g. dir + "/state.json".
PATTERN = re.compile(r'"/?(?:' + NAMES + r')"')
COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)

BAD = {"src/train/a.cpp": 'int x;\nif (exists(dir + "/COMMITTED")) {}\n',
       "cli/b.cpp": 'auto p = fs::path(d) / "state.json";\n',
       "src/launch/c.h": 'bool ok = fs::exists(p / "tensors-00000.bin");\n'}
GOOD = {"src/ckpt/d.cpp": 'auto m = "COMMITTED"; auto s = "/state.json";\n',
        "src/train/e.cpp": '// "COMMITTED" named in a comment\n'
                           'OLMO_CHECK(ok, "no COMMITTED marker: the save was interrupted");\n'
                           'auto h = dir + "/model.safetensors.index.json";\n'}


def scan(root):
    hits = []
    for top in ("src", "cli"):
        for dirpath, _, files in sorted(os.walk(os.path.join(root, top))):
            rel_dir = os.path.relpath(dirpath, root)
            if rel_dir == os.path.join("src", "ckpt") or rel_dir.startswith(os.path.join("src", "ckpt") + os.sep):
                continue
            for f in sorted(files):
                if not f.endswith(EXTS):
                    continue
                rel = os.path.join(rel_dir, f)
                with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as fh:
                    raw = fh.read()
                code = COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), raw).split("\n")
                src = raw.split("\n")
                for n, line in enumerate(code, 1):
                    if PATTERN.search(line):
                        hits.append((rel, n, src[n - 1].strip()))
    return hits


def self_check():
    with tempfile.TemporaryDirectory() as tmp:
        for rel, text in {**BAD, **GOOD}.items():
            os.makedirs(os.path.join(tmp, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(tmp, rel), "w") as f:
                f.write(text)
        hits = scan(tmp)
    flagged = {h[0] for h in hits}
    missed = [r for r in BAD if r not in flagged]
    over = [h for h in hits if h[0] in GOOD]
    assert not missed, f"layout rule misses the planted {missed}"
    assert not over, f"layout rule flags allowed code {over}"
    assert [h[1] for h in hits if h[0] == "src/train/a.cpp"] == [2], "layout rule: wrong line number"


def main():
    self_check()
    hits = scan(ROOT)
    for rel, n, line in hits:
        print(f"FAIL {rel}:{n}: names a checkpoint file: {line}\n     ask src/ckpt "
              "(ckpt/checkpoint.h: is_committed, looks_like_checkpoint, state_file, ...)")
    print(f"ckpt_layout_only_in_ckpt: {len(hits)} violation(s)")
    return 1 if hits else 0


if __name__ == "__main__":
    sys.exit(main())
