"""bench/olmo_eval_ref.py (the reference scorer on the whole fast set, cached per chunk) survives
being killed at any moment and continues where it stopped, without scoring a document twice.

1. `run` on 2 small fast tasks (copycolors_10way_fast, arc_easy_test_mc_5shot_fast; context
   512, chunks of ~1,500 query tokens, 12 documents each) in a temporary cache, killed at a
   named point, not after a wait: OLMO_TEST_KILL=chunk:2 makes it SIGKILL itself inside the
   write of its second chunk (written and fsync'ed to `*.tmp<pid>`, not renamed): one chunk is
   committed and the half-written one is left, as a kill during a write leaves it.
2. `run` again: the half-written file is removed, the chunk written before the kill is kept
   byte for byte, and together the chunks cover exactly the 12 smallest doc_ids of each task,
   each once.
3. `compare`: the cached reference state (ICLMetric.compute() over the covered documents)
   agrees with `olmo evaluate --limit 12` (every prediction, accuracies equal, other metrics
   1e-5 rel.) and the coverage line reads 24 of the tasks' 2,476 documents.
4. `pack` moves the chunks into the record (a temporary --record dir here); a fresh cache then
   compares and runs from the record alone, and a document in both places is refused.
5. A cache whose meta.json names another model hash is refused (no mixing of two models).
Exits 77 (skip) when data/olmo_eval or olmo_eval is missing. Exit 0 = pass.
"""
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile

from olmo_test import check, finish, skip

SRC = os.environ.get("OLMO_SOURCE_DIR", ".")
DATA = os.environ.get("OLMO_EVAL_DATA", os.path.join(SRC, "data", "olmo_eval"))
TOOL = os.path.join(SRC, "bench", "olmo_eval_ref.py")
TASKS = "copycolors_10way_fast,arc_easy_test_mc_5shot_fast"
N = 12

if not os.path.exists(os.path.join(DATA, "manifest.json")):
    skip(f"{DATA}/manifest.json missing (scripts/olmo_eval_data.py fetches it)")
try:
    import olmo_eval  # noqa: F401
except ImportError as e:
    skip(f"{e} (scripts/install_deps.sh installs scripts/requirements-olmo-eval.txt)")


def tool(cache, *args):
    record = os.path.join(os.path.dirname(cache), "record")
    return [sys.executable, TOOL, *args, "--tasks", TASKS, "--ctx", "512", "--cache", cache,
            "--record", record]


def chunks(cache):
    return sorted(glob.glob(os.path.join(cache, "ctx512-*", "*", "[0-9]*-[0-9]*.json")))


def main():
    env = dict(os.environ, OMP_WAIT_POLICY="passive")
    with tempfile.TemporaryDirectory() as tmp:
        cache = os.path.join(tmp, "cache")
        run = tool(cache, "run", "--chunk-tokens", "1500", "--max-docs", str(N))
        p = subprocess.run(run, capture_output=True, text=True,
                           env=dict(env, OLMO_TEST_KILL="chunk:2"))
        out = p.stdout + p.stderr
        before = {c: open(c, "rb").read() for c in chunks(cache)}
        stale = glob.glob(os.path.join(cache, "ctx512-*", "*", "*.json.tmp*"))
        check(p.returncode == -signal.SIGKILL and len(before) == 1 and len(stale) == 1
              and "all documents scored" not in out,
              f"first run killed inside the write of its second chunk (exit {p.returncode}): "
              f"{len(before)} chunk(s) committed, half-written {[os.path.basename(s) for s in stale]}",
              out[-800:])
        key = glob.glob(os.path.join(cache, "ctx512-*"))[0]
        bad = subprocess.run(run, capture_output=True, text=True,
                             env=dict(env, OLMO_TEST_KILL="chunk:0"))
        check(bad.returncode == 1 and "OLMO_TEST_KILL = 'chunk:0'" in bad.stderr,
              "OLMO_TEST_KILL=chunk:0 refused: " + bad.stderr.strip()[-120:])

        p = subprocess.run(run, capture_output=True, text=True, env=env)
        check(p.returncode == 0 and "all documents scored" in p.stdout, "second run finishes",
              f"rc {p.returncode}: {(p.stdout + p.stderr)[-800:]}")
        check(stale and not any(os.path.exists(s) for s in stale),
              "the half-written chunk is removed")
        check(all(open(c, "rb").read() == b for c, b in before.items()),
              "chunks written before the kill are kept unchanged")
        all_docs = json.load(open(os.path.join(key, "docs.json")))
        for label in TASKS.split(","):
            docs = [d for c in chunks(cache) if f"/{label}/" in c for d in json.load(open(c))["docs"]]
            check(sorted(docs) == all_docs[label][:N],
                  f"{label}: chunks cover its {N} smallest doc_ids once ({sorted(docs)})")

        p = subprocess.run(tool(cache, "compare"), capture_output=True, text=True, env=env)
        total = sum(len(all_docs[l]) for l in TASKS.split(","))
        check(p.returncode == 0 and "PASS" in p.stdout
              and f"covered: {2 * N}/{total} documents" in p.stdout,
              "compare passes on the covered part", (p.stdout + p.stderr)[-1500:])
        print(p.stdout.rstrip())

        # 4. pack: the chunks move into the checked-in record; a fresh machine (no cache at all)
        #    reads them from there and compare gives the same coverage; a document in both the
        #    record and the cache is refused.
        kept = {os.path.basename(c): json.load(open(c)) for c in chunks(cache)}
        p = subprocess.run(tool(cache, "pack"), capture_output=True, text=True, env=env)
        record = os.path.join(tmp, "record", os.path.basename(key))
        check(p.returncode == 0 and not chunks(cache)
              and len(glob.glob(os.path.join(record, "*.jsonl.gz"))) == 2,
              "pack moves every chunk into the record", (p.stdout + p.stderr)[-800:])
        fresh = os.path.join(tmp, "fresh_cache")
        p = subprocess.run(tool(fresh, "compare"), capture_output=True, text=True, env=env)
        check(p.returncode == 0 and "PASS" in p.stdout
              and f"covered: {2 * N}/{total} documents" in p.stdout,
              "on a fresh cache compare reads the record", (p.stdout + p.stderr)[-1500:])
        p = subprocess.run(tool(fresh, "run", "--chunk-tokens", "1500", "--max-docs", str(N)),
                           capture_output=True, text=True, env=env)
        check(p.returncode == 0 and "all documents scored" in p.stdout
              and not chunks(fresh), "a run on a fresh cache scores nothing the record holds",
              (p.stdout + p.stderr)[-800:])
        name, c = sorted(kept.items())[0]
        dup = os.path.join(key, c["label"], name)
        open(dup, "w").write(json.dumps(c))
        p = subprocess.run(tool(cache, "status"), capture_output=True, text=True, env=env)
        check(p.returncode != 0 and "covered by two chunks" in p.stderr,
              "a document in both the record and the cache is refused", p.stderr.strip()[-400:])
        os.remove(dup)

        meta = os.path.join(key, "meta.json")
        m = json.load(open(meta))
        m["model_sha256"] = "0" * 64
        open(meta, "w").write(json.dumps(m))
        p = subprocess.run(run, capture_output=True, text=True, env=env)
        check(p.returncode != 0 and "differ from the re-exported model" in p.stderr,
              "a cache of another model is refused", p.stderr.strip()[-400:])
    finish("olmo_eval_ref resume")


if __name__ == "__main__":
    main()
