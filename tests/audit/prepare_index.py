"""Issue 8, item 1: what `olmo prepare` writes for the audit, against numpy, and the train /
held-out contamination check end to end with the real dolma2 tokenizer.

1. prepare two training entries and two held-out sets from generated JSONL; token_counts.bin per
   part must equal numpy.bincount of the written .npy file, token_stats.json's entropy must equal
   the numpy plug-in entropy, docs.bin must list every document of the .csv.gz index with its
   length;
2. train a tiny model 2 steps on a mix of both entries whose eval set holds a copy of a training
   document and a document built around a 120-word training passage: the in-loop audit raises
   contamination alarms for exactly those two documents and a duplicate_across_entries alarm
   (one training document sits in both entries); `olmo audit` exits 3 naming them; a run whose
   held-out set is clean exits 0 with no contamination finding, and its validation record
   carries the canary exposure that the benchmarks callback logged at the same step.
"""
import gzip
import json
import os
import random
import shutil
import struct
import tempfile

import numpy as np

import olmo_test as ot
from olmo_test import SRC, olmo


def words(rng, n, vocab):
    return " ".join(rng.choice(vocab) for _ in range(n))


def write_jsonl(path, docs):
    with open(path, "w") as f:
        for i, t in enumerate(docs):
            f.write(json.dumps({"id": f"d{i}", "text": t}) + "\n")


def read_counts(path):
    b = open(path, "rb").read()
    assert b[:8] == b"OLMOTCNT"
    vocab, parts = struct.unpack_from("<II", b, 8)
    at, out = 16, []
    for _ in range(parts):
        (nnz,) = struct.unpack_from("<I", b, at)
        at += 4
        ids = np.frombuffer(b, dtype="<u4", count=nnz, offset=at)
        at += 4 * nnz
        cnt = np.frombuffer(b, dtype="<u8", count=nnz, offset=at)
        at += 8 * nnz
        out.append((ids, cnt))
    assert at == len(b)
    return vocab, out


def check_index(out):
    prep = json.load(open(os.path.join(out, "prepare.json")))
    vocab, parts = read_counts(os.path.join(out, "token_counts.bin"))
    assert len(parts) == len(prep["files"])
    total = np.zeros(vocab, dtype=np.int64)
    doc_lens = []
    for f, (ids, cnt) in zip(prep["files"], parts):
        toks = np.fromfile(os.path.join(out, f["path"]), dtype="<u4")
        ref = np.bincount(toks, minlength=vocab)
        mine = np.zeros(vocab, dtype=np.int64)
        mine[ids] = cnt
        assert np.array_equal(mine, ref), f"{out}/{f['path']}: token counts differ from numpy"
        total += ref
        with gzip.open(os.path.join(out, f["index"]), "rt") as g:
            for line in g:
                s, e = line.split(",")[:2]
                doc_lens.append(int(e) - int(s) - 1)  # EOS excluded
    p = total[total > 0] / total.sum()
    h = float(-(p * np.log2(p)).sum())
    st = json.load(open(os.path.join(out, "token_stats.json")))
    assert abs(st["unigram_entropy_bits"] - h) < 1e-9, (st["unigram_entropy_bits"], h)
    assert st["tokens"] == int(total.sum()) == prep["tokens"]
    top = int(np.argmax(total))
    assert st["top_tokens"][0][0] == top
    b = open(os.path.join(out, "docs.bin"), "rb").read()
    assert b[:8] == b"OLMODOCS"
    (n,) = struct.unpack_from("<Q", b, 8)
    lens = [struct.unpack_from("<IIQ", b, 16 + 16 * i)[1] for i in range(n)]
    assert n == prep["docs"] and lens == doc_lens, (n, prep["docs"])
    g = open(os.path.join(out, "ngrams13.bin"), "rb").read()
    assert g[:8] == b"OLMONG13"
    k, sample, count = struct.unpack_from("<IIQ", g, 8)
    hashes = np.frombuffer(g, dtype="<u8", count=count, offset=24)
    assert k == 13 and sample >= 1 and np.all(np.diff(hashes.astype(np.float64)) >= 0)
    assert np.all(hashes % sample == 0)
    return st


def main():
    root = tempfile.mkdtemp(prefix="olmo_prepare_index_")
    try:
        rng = random.Random(5)
        letters = "abcdefghijklmnopqrstuvwxyz"
        vocab = ["".join(rng.choice(letters) for _ in range(rng.randint(3, 9))) for _ in range(400)]
        a = [words(rng, 120, vocab) for _ in range(20)]
        b = [words(rng, 120, vocab) for _ in range(15)] + [a[11]]
        held = [a[5], words(rng, 30, vocab) + " " + " ".join(a[7].split()[:120]) + " " +
                words(rng, 30, vocab)] + [words(rng, 120, vocab) for _ in range(4)]
        clean = [words(rng, 120, vocab) for _ in range(4)]
        for name, docs in (("a", a), ("b", b), ("held", held), ("clean", clean)):
            write_jsonl(os.path.join(root, f"{name}.jsonl"), docs)
            olmo("prepare", "--out", os.path.join(root, name), "--threads", "2",
                 os.path.join(root, f"{name}.jsonl"))
            st = check_index(os.path.join(root, name))
        print(f"prepare index = numpy (counts, entropy {st['unigram_entropy_bits']:.3f} bits, docs)")
        mix = os.path.join(root, "train.mix")
        with open(mix, "w") as f:
            f.write("a,a/part-00000.npy\nb,b/part-00000.npy\n")
        cfg = [os.path.join(SRC, "tests", "configs", "tiny.yaml"), f"data.mix={mix}",
               "model.vocab_size=100352", "data.eos_id=100257", "data.pad_id=100277",
               "trainer.max_steps=2", "trainer.threads=1", "eval.at_start=false"]

        run = os.path.join(root, "run")
        olmo("train", *cfg, f"trainer.run_dir={run}", f"eval.sets.held={os.path.join(root, 'held')}")
        al = ot.read_metrics(run, None)
        al = [r for r in al if r.get("kind") == "alarm"]
        # One alarm per cause; every finding in RUN_DIR/audit/start_findings.jsonl.
        assert sorted(r["cause"] for r in al) == ["contamination", "duplicate_across_entries"], al
        assert all(r["step"] == 0 for r in al), al
        found = [json.loads(x) for x in open(os.path.join(run, "audit", "start_findings.jsonl"))]
        cont = [r for r in found if r["kind"] == "contamination"]
        dup = [r for r in found if r["kind"] == "duplicate_across_entries"]
        assert len(cont) == 2, cont
        assert "document 0 " in cont[0]["detail"] and "identical" in cont[0]["detail"], cont[0]
        assert "document 1 " in cont[1]["detail"] and "13-grams" in cont[1]["detail"], cont[1]
        assert len(dup) == 1 and "2 mix entries" in dup[0]["detail"], dup
        p = olmo("audit", run, check=False)
        assert p.returncode == 3, (p.returncode, p.stdout, p.stderr)
        assert p.stdout.count("FINDING contamination") == 2, p.stdout
        assert "FINDING duplicate_across_entries" in p.stdout, p.stdout
        for line in p.stdout.splitlines():
            if line.startswith("FINDING"):
                print("  " + line[:160])

        run2 = os.path.join(root, "run_clean")
        # The same mix without the duplicated document's second entry, a clean held-out set.
        mix2 = os.path.join(root, "train_a.mix")
        with open(mix2, "w") as f:
            f.write("a,a/part-00000.npy\n")
        cfg2 = [c if not c.startswith("data.mix=") else f"data.mix={mix2}" for c in cfg]
        # With canaries the validation record carries the benchmarks callback's exposure.
        canaries = os.path.join(root, "canaries.json")
        with open(canaries, "w") as f:
            json.dump([{"name": f"c{n}", "count": n, "secret": s, "prefix": f"The code of c{n} is",
                        "text": f"The code of c{n} is " + " ".join(s)}
                       for n, s in ((0, "123456"), (1, "654321"))], f)
        olmo("train", *cfg2, f"trainer.run_dir={run2}",
             f"eval.sets.clean={os.path.join(root, 'clean')}", "validation.interval=1",
             f"benchmarks.canaries={canaries}", "benchmarks.exposure_candidates=4")
        p = olmo("audit", run2, check=False)
        assert p.returncode == 0 and "clean" in p.stdout, (p.stdout, p.stderr)
        recs = ot.read_metrics(run2, None)
        val = [json.loads(x) for x in open(os.path.join(run2, "validation.jsonl"))]
        assert [v["step"] for v in val] == [1, 2], val
        for v in val:  # step 1 mid-run, step 2 at the end of the run
            ex = [r for r in recs if r.get("kind") == "exposure" and r["step"] == v["step"]]
            assert len(ex) == 1, ex
            want = {k: x["mean"] for k, x in ex[0]["by_count"].items()}
            assert v["exposure"] == want and set(want) == {"0", "1"}, (v, want)
        print("prepare index test OK")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
