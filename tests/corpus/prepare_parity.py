"""Parity test of `olmo prepare` against independent references: PyPI tiktoken (token ids of
every document, EOS 100257 after each) and OLMo-core's own reader of the document index
(olmo_core.data.utils.iter_document_indices, from the .csv.gz and from the EOS positions).
Also checks byte-identical output for --threads 1 and 2, and the CLI's bad-input messages.
Env (set by olmo_py_test): OLMO_BIN, TIKTOKEN_CACHE_DIR."""
import gzip
import json
import os
import sys
import tempfile

import numpy as np
import tiktoken
from olmo_core.data.utils import iter_document_indices

from olmo_test import fail, finish, olmo

EOS = 100257

TEXTS = [
    "Hello world",
    "line1\nline2\r\nline3\n\n\nend",
    "special strings stay text: <|endoftext|> <|pad|> <|im_start|>",
    "unicode: caf\u00e9 \u4e2d\u6587 \U0001F600\U0001F44D\U0001F3FD \u00a0nbsp \ufeffbom",
    "def f(x):\n    return x ** 2  # code\n",
    "   leading and trailing spaces   ",
    "digits 1234567890 3.14159 12,345",
] + [f"document number {i}: " + "lorem ipsum " * (i % 50) for i in range(300)]


def run(args, ok=True):
    """`olmo prepare --no-progress ARGS` (exit 0 asserted when ok)."""
    return olmo("prepare", "--no-progress", *args, check=ok)


def main():
    enc = tiktoken.get_encoding("cl100k_base")
    with tempfile.TemporaryDirectory() as tmp:
        a = os.path.join(tmp, "a.jsonl")
        b = os.path.join(tmp, "b.jsonl.gz")
        with open(a, "w") as f:
            for i, t in enumerate(TEXTS[:150]):
                f.write(json.dumps({"id": f"a{i}", "text": t}) + "\n")
        with gzip.open(b, "wt") as f:
            for i, t in enumerate(TEXTS[150:]):
                f.write(json.dumps({"id": f"b,{i}", "text": t}) + "\n")
        outs = []
        for th in (1, 2):
            out = os.path.join(tmp, f"out{th}")
            run(["--out", out, "--threads", str(th), "--max-tokens-per-file", "3000", a, b])
            outs.append(out)
        names = sorted(os.listdir(outs[0]))
        if names != sorted(os.listdir(outs[1])):
            fail("different file lists for --threads 1 and 2")
        for n in names:
            if open(os.path.join(outs[0], n), "rb").read() != open(os.path.join(outs[1], n), "rb").read():
                fail(f"{n} differs between --threads 1 and 2")
        npys = sorted(n for n in names if n.endswith(".npy"))
        if len(npys) < 2:
            fail(f"expected several files, got {npys}")
        # Expected stream: tiktoken ids of each document (specials as plain text) + EOS.
        want_docs = [enc.encode(t, disallowed_special=()) + [EOS] for t in TEXTS]
        ids = [f"a{i}" for i in range(150)] + [f"b,{i}" for i in range(len(TEXTS) - 150)]
        got_docs, got_ids = [], []
        for n in npys:
            path = os.path.join(outs[0], n)
            arr = np.fromfile(path, dtype="<u4")
            spans_csv = list(iter_document_indices(path, use_array_if_local=False, dtype=np.uint32))
            spans_eos = list(iter_document_indices(path, eos_token_id=EOS, dtype=np.uint32))
            if spans_csv != spans_eos:
                fail(f"{n}: index spans differ from EOS positions")
            with gzip.open(path.replace(".npy", ".csv.gz"), "rt") as f:
                rows = [line.rstrip("\n") for line in f]
            for (s, e), row in zip(spans_csv, rows):
                got_docs.append(arr[s:e].tolist())
                rid = row.split(",", 2)[2]
                got_ids.append(rid[1:-1].replace('""', '"') if rid.startswith('"') else rid)
        if got_docs != want_docs:
            bad = next(i for i, (g, w) in enumerate(zip(got_docs + [None] * 999, want_docs)) if g != w)
            fail(f"tokens differ from tiktoken at document {bad}: {TEXTS[bad][:60]!r}")
        if got_ids != ids:
            fail("document ids in the index differ from the input ids")
        # Bad input: malformed line -> file:line; empty corpus -> clear error.
        bad = os.path.join(tmp, "bad.jsonl")
        with open(bad, "w") as f:
            f.write('{"text": "ok"}\n{"text": nope}\n')
        p = run(["--out", os.path.join(tmp, "o3"), bad], ok=False)
        if p.returncode != 1 or f"{bad}:2:" not in p.stderr:
            fail(f"malformed line: rc {p.returncode}, stderr {p.stderr!r}")
        p = run(["--out", os.path.join(tmp, "o3"), "--skip-bad-lines", bad])
        if "skipped 1 malformed line" not in p.stdout:
            fail(f"skip mode summary: {p.stdout!r}")
        empty = os.path.join(tmp, "empty.jsonl")
        open(empty, "w").close()
        p = run(["--out", os.path.join(tmp, "o4"), empty], ok=False)
        if p.returncode != 1 or "empty corpus" not in p.stderr or empty not in p.stderr:
            fail(f"empty corpus: rc {p.returncode}, stderr {p.stderr!r}")
    finish(f"prepare parity ({len(TEXTS)} docs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
