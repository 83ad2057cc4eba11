#!/usr/bin/env python3
"""Tokenizer throughput: olmo's C++ dolma2/cl100k encode vs PyPI tiktoken, same text, same run.

Both run single-threaded on one string of ~10 MB of real text (default: 60% Python 3.11 stdlib .py
files without tests, 40% /usr/share/doc copyright files and changelogs; or --input FILE):
  ours:     `olmo tokenize --bench FILE --repeat R` (encode_append on one thread, best of R)
  tiktoken: Encoding.encode_ordinary(text), best of R (Rust core, one thread)
The token counts must agree (full id parity is the job of tests/tokenizer/tokenizer_parity.py).
Prints MB/s (10^6 bytes/s) for each and the ratio; a markdown row for bench/results/tokenizer.md.

usage: OLMO_BIN=build/olmo TIKTOKEN_CACHE_DIR=data/tiktoken_cache \
       .venv/bin/python bench/tokenizer_bench.py [--mb 10] [--repeat 3] [--input FILE]
"""
import argparse
import datetime
import glob
import gzip
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def gather(limit):
    """60% stdlib Python code, 40% English prose (Debian changelogs and copyright files)."""
    parts = []

    def take(files, budget):
        n = 0
        for f in files:
            try:
                raw = gzip.open(f).read() if f.endswith(".gz") else open(f, "rb").read()
                t = raw.decode("utf-8")
            except (UnicodeDecodeError, OSError, EOFError):
                continue
            parts.append(t)
            n += len(raw)
            if n >= budget:
                return n
        return n

    py = sorted(f for f in glob.glob("/usr/lib/python3.11/**/*.py", recursive=True)
                if "/test" not in f and "site-packages" not in f)
    docs = sorted(glob.glob("/usr/share/doc/*/copyright")) + \
        sorted(glob.glob("/usr/share/doc/**/changelog*.gz", recursive=True))
    got = take(py, limit * 6 // 10)
    take(docs, limit - got)
    return "\n".join(parts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=10.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--input", help="text file to encode instead of the default mix")
    a = ap.parse_args()
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", os.path.join(ROOT, "data", "tiktoken_cache"))
    olmo = os.environ.get("OLMO_BIN", os.path.join(ROOT, "build", "olmo"))
    import tiktoken

    text = open(a.input, encoding="utf-8").read() if a.input else gather(int(a.mb * 1e6))
    data = text.encode("utf-8")
    with tempfile.NamedTemporaryFile("wb", suffix=".txt", delete=False) as f:
        f.write(data)
        path = f.name
    try:
        r = subprocess.run([olmo, "tokenize", "--bench", path, "--repeat", str(a.repeat)],
                           capture_output=True, text=True, check=True)
    finally:
        os.unlink(path)
    fields = r.stdout.split()
    ours = dict(zip(fields[0::2], fields[1::2]))
    ours_s, ours_tokens = float(ours["seconds"]), int(ours["tokens"])

    enc = tiktoken.get_encoding("cl100k_base")
    best = float("inf")
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        ids = enc.encode_ordinary(text)
        best = min(best, time.perf_counter() - t0)
    if len(ids) != ours_tokens:
        print(f"token counts differ: ours {ours_tokens}, tiktoken {len(ids)}")
        sys.exit(1)
    mb = len(data) / 1e6
    print(f"text: {len(data)} bytes, {len(ids)} tokens")
    print(f"ours:     {ours_s:.3f} s  {mb / ours_s:7.2f} MB/s (1 thread)")
    print(f"tiktoken: {best:.3f} s  {mb / best:7.2f} MB/s (1 thread, tiktoken {tiktoken.__version__})")
    print(f"ratio ours/tiktoken: {best / ours_s:.2f}x")
    print(f"| {datetime.date.today()} | {mb:.1f} MB, {len(ids)} tokens | {mb / ours_s:.2f} | "
          f"{mb / best:.2f} | {best / ours_s:.2f}x |")


if __name__ == "__main__":
    main()
