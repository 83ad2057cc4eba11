"""OLMo-core parity of the data pipeline (src/data), against PyPI ai2-olmo-core itself.

On small uint32 token files written here, OLMo-core's NumpyFSLDataset + NumpyFSLDataLoader
(single process; rank r of world W emulated with dp_rank / dp_world_size) and `olmo data batches`
must give, for W = 1, 2, 4 and every rank, over two epochs: the same instance indices per batch,
the same token ids, and the same per-instance document lengths (generate_doc_lengths). Also:
  * the dataset fingerprint equals OLMo-core's, and our loader state equals its state_dict;
  * resume: an OLMo-core state (mid-epoch, and at the end of epoch 1) loaded into our loader
    continues exactly as OLMo-core's unbroken stream; a doubled / halved global batch resumes
    where OLMo-core's does (batches_processed = tokens_processed // global_batch_size);
  * a fingerprint mismatch is an error (as in OLMo-core) unless --ignore-fingerprint;
  * NumpyPaddedFSLDataset (eval): same instances, padding and labels (get_labels), documents
    longer than seq_len truncated;
  * a mix file gives the same stream as the listed files; the global hash agrees across ranks.
"""
import json
import logging
import os
import subprocess
import tempfile

import numpy as np
import torch

from olmo_core.data.collator import DataCollator
from olmo_core.data.data_loader import NumpyFSLDataLoader
from olmo_core.data.numpy_dataset import NumpyFSLDataset, NumpyPaddedFSLDataset
from olmo_core.data.utils import get_labels

import olmo_test as ot
from olmo_test import check, finish

logging.disable(logging.WARNING)
OLMO = ot.bin_path()
EOS, PAD, VOCAB = 100257, 100277, 100278
T = 16


def write_tokens(path, n, rng, doc_mean=11):
    tok = rng.integers(0, 50000, size=n, dtype=np.uint32)
    # Documents of random length, each ending in EOS; the last one may lack it.
    pos = np.cumsum(rng.integers(1, 2 * doc_mean, size=n))
    pos = pos[pos < n]
    tok[pos] = EOS
    tok.astype("<u4").tofile(path)


def oc_dataset(paths, work):
    ds = NumpyFSLDataset(*paths, sequence_length=T, pad_token_id=PAD, eos_token_id=EOS,
                         vocab_size=VOCAB, dtype=np.uint32, generate_doc_lengths=True)
    ds.work_dir = work
    ds.prepare()
    return ds


def oc_loader(ds, work, gb, seed, rank=0, world=1):
    return NumpyFSLDataLoader(ds, collator=DataCollator(pad_token_id=PAD), global_batch_size=gb * T,
                              work_dir=work, seed=seed, dp_world_size=world, dp_rank=rank,
                              num_threads=0)


def oc_epoch(dl, epoch, limit=None):
    """OLMo-core batches of one epoch as (indices, tokens, doc_lens) lists."""
    dl.reshuffle(epoch=epoch)
    out = []
    for b in dl:
        dls = [[int(v) for v in row if v != 0] for row in b["doc_lens"]]
        out.append((b["index"].tolist(), b["input_ids"].numpy().astype(np.int32), dls))
        if limit is not None and len(out) == limit:
            break
    return out


def ours(tmp, paths, gb, seed, extra, name):
    tok, js = os.path.join(tmp, name + ".bin"), os.path.join(tmp, name + ".jsonl")
    cmd = [OLMO, "data", "batches", *paths, "--seq-len", str(T), "--global-batch", str(gb),
           "--seed", str(seed), "--out-tokens", tok, "--out-jsonl", js, "--doc-lens", *extra]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, r
    lines = [json.loads(l) for l in open(js)]
    toks = np.fromfile(tok, dtype="<i4")
    B = len(lines[0]["indices"]) if lines else 1
    toks = toks.reshape(len(lines), B, T) if lines else toks
    return [(l["indices"], toks[i], l["doc_lens"], l["epoch"], l["hash"])
            for i, l in enumerate(lines)], r


def same_stream(oc, our, what):
    check(our is not None and len(oc) == len(our),
          f"{what}: {len(oc)} OLMo-core batches vs {None if our is None else len(our)} ours")
    if our is None:
        return
    for i, (a, b) in enumerate(zip(oc, our)):
        if a[0] != b[0]:
            check(False, f"{what}: batch {i} indices {a[0]} vs {b[0]}")
            return
        if not np.array_equal(a[1], b[1]):
            check(False, f"{what}: batch {i} tokens differ")
            return
        if a[2] != b[2]:
            check(False, f"{what}: batch {i} doc_lens {a[2]} vs {b[2]}")
            return


def main():
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        work = os.path.join(tmp, "work")
        os.makedirs(work)
        sizes = [1000, 517, 10, 2049, 333]  # the 10-token file holds no instance
        paths = []
        for i, n in enumerate(sizes):
            p = os.path.join(tmp, f"part-{i:02d}-00000.npy")
            write_tokens(p, n, rng)
            paths.append(p)
        ds = oc_dataset(paths, work)
        N = len(ds)
        check(N == sum(n // T for n in sizes), f"OLMo-core dataset size {N}")
        r = subprocess.run([OLMO, "data", "info", *paths, "--seq-len", str(T)],
                           capture_output=True, text=True, check=True)
        info = dict(l.split(" ", 1) for l in r.stdout.strip().splitlines())
        check(int(info["instances"]) == N, f"instances {info['instances']} vs {N}")
        check(info["fingerprint"] == ds.fingerprint,
              f"fingerprint {info['fingerprint']} vs OLMo-core {ds.fingerprint}")

        gb, seed = 8, 34521
        # 1. Same batches per rank for W = 1, 2, 4 over two epochs.
        hashes = {}
        for world in (1, 2, 4):
            for rank in range(world):
                dl = oc_loader(ds, work, gb, seed, rank, world)
                oc = oc_epoch(dl, 1)
                dl.reset()
                oc += oc_epoch(dl, 2)
                our, res = ours(tmp, paths, gb, seed,
                                ["--rank", str(rank), "--world", str(world), "--epochs", "2"],
                                f"w{world}r{rank}")
                check(our is not None, f"W={world} r={rank}: {res.stderr}")
                same_stream(oc, our, f"W={world} rank={rank}")
                if our:
                    check([b[3] for b in our] == [1] * (N // gb) + [2] * (N // gb),
                          f"W={world} r={rank}: epoch labels")
                    hashes[(world, rank)] = [b[4] for b in our]
        ref = hashes.get((1, 0))
        check(ref is not None and all(h == ref for h in hashes.values()),
              "global hash differs across ranks / world sizes")
        check(ref is not None and len(set(ref)) == len(ref), "global hash repeats across batches")

        # 2. State equality and resume from OLMo-core states (mid-epoch and end of epoch 1).
        nb = N // gb
        full = oc_epoch(oc_loader(ds, work, gb, seed), 1)
        dl = oc_loader(ds, work, gb, seed)
        dl.reshuffle(epoch=2)
        full2 = [(b["index"].tolist(), b["input_ids"].numpy().astype(np.int32),
                  [[int(v) for v in row if v != 0] for row in b["doc_lens"]]) for b in dl]
        for k in (3, nb):
            dl = oc_loader(ds, work, gb, seed)
            oc_epoch(dl, 1, limit=k)
            st = dl.state_dict()
            st_path = os.path.join(tmp, f"oc_state_{k}.json")
            json.dump(st, open(st_path, "w"))
            our_state = os.path.join(tmp, f"our_state_{k}.json")
            _, res = ours(tmp, paths, gb, seed, ["--batches", str(k), "--state-out", our_state],
                          f"st{k}")
            check(res.returncode == 0 and json.load(open(our_state)) == st,
                  f"state after {k} batches: ours {res.returncode and res.stderr or open(our_state).read()} vs OLMo-core {st}")
            # Resume ours from OLMo-core's state (seed flag deliberately wrong: state wins).
            our, res = ours(tmp, paths, gb, 999, ["--state-in", st_path, "--epochs", "2"],
                            f"res{k}")
            check(our is not None, f"resume {k}: {res.stderr}")
            same_stream(full[k:] + full2, our, f"resume after {k} batches")

        # 3. Batch-size change: doubled and halved global batch resume at tokens_processed.
        for k, new_gb in ((4, 16), (5, 16), (3, 4)):
            dl = oc_loader(ds, work, gb, seed)
            oc_epoch(dl, 1, limit=k)
            st_path = os.path.join(tmp, f"oc_bs_{k}_{new_gb}.json")
            json.dump(dl.state_dict(), open(st_path, "w"))
            dl2 = oc_loader(ds, work, new_gb, seed)
            dl2.load_state_dict(json.load(open(st_path)))
            oc = oc_epoch(dl2, 1)
            our, res = ours(tmp, paths, gb, seed, ["--state-in", st_path, "--resume-batch",
                                                   str(new_gb)], f"bs{k}_{new_gb}")
            check(our is not None, f"batch-size change {k}->{new_gb}: {res.stderr}")
            same_stream(oc, our, f"batch size {gb}->{new_gb} after {k} batches")

        # 4. Fingerprint mismatch: OLMo-core raises, we error unless told to ignore.
        st = json.load(open(os.path.join(tmp, "oc_state_3.json")))
        st["dataset_fingerprint"] = "0" * 64
        bad = os.path.join(tmp, "bad_state.json")
        json.dump(st, open(bad, "w"))
        dl = oc_loader(ds, work, gb, seed)
        try:
            dl.load_state_dict(st)
            check(False, "OLMo-core accepted a wrong fingerprint")
        except RuntimeError:
            pass
        our, res = ours(tmp, paths, gb, seed, ["--state-in", bad], "fpbad")
        check(our is None and res.returncode == 1 and "fingerprint" in res.stderr,
              f"fingerprint mismatch not an error: rc={res.returncode} {res.stderr}")
        our, res = ours(tmp, paths, gb, seed, ["--state-in", bad, "--ignore-fingerprint"], "fpok")
        check(our is not None, f"--ignore-fingerprint failed: {res.stderr}")
        same_stream(full[3:], our, "resume with ignored fingerprint")

        # 5. Mix file (paths relative to a data root) == the same files listed.
        mix = os.path.join(tmp, "mix.txt")
        with open(mix, "w") as f:
            f.write("# test mix\n\n")
            for p in paths:
                f.write(f"src{os.path.basename(p)[5:7]},{os.path.basename(p)}\n")
        our, res = ours(tmp, ["--mix", mix, "--data-root", tmp], gb, seed, [], "mix")
        check(our is not None, f"mix: {res.stderr}")
        same_stream(full, our, "mix file")

        # 6. Eval: NumpyPaddedFSLDataset (one document per instance, padded, label-masked).
        Te = 24
        epaths = []
        for i, n in enumerate((300, 211)):
            p = os.path.join(tmp, f"eval-{i}.npy")
            write_tokens(p, n, rng, doc_mean=15)  # some documents longer than Te
            epaths.append(p)
        pds = NumpyPaddedFSLDataset(*epaths, sequence_length=Te, pad_token_id=PAD,
                                    eos_token_id=EOS, vocab_size=VOCAB, dtype=np.uint32)
        pds.work_dir = work
        pds.prepare()
        ids_f, tg_f = os.path.join(tmp, "eval_ids.bin"), os.path.join(tmp, "eval_tg.bin")
        r = subprocess.run([OLMO, "data", "eval", *epaths, "--seq-len", str(Te), "--out-tokens",
                            ids_f, "--out-targets", tg_f], capture_output=True, text=True)
        check(r.returncode == 0, f"olmo data eval: {r.stderr}")
        if r.returncode == 0:
            fp = r.stdout.split("fingerprint ")[1].strip()
            check(fp == pds.fingerprint, f"padded fingerprint {fp} vs {pds.fingerprint}")
            ids = np.fromfile(ids_f, dtype="<i4").reshape(-1, Te)
            tg = np.fromfile(tg_f, dtype="<i4").reshape(-1, Te)
            check(len(ids) == len(pds), f"eval instances {len(ids)} vs {len(pds)}")
            items = [pds[i] for i in range(len(pds))]
            batch = DataCollator(pad_token_id=PAD)(items)
            want_ids = batch["input_ids"].numpy().astype(np.int32)
            want_tg = get_labels(batch).numpy().astype(np.int32)
            check(np.array_equal(ids, want_ids), "eval input_ids differ")
            check(np.array_equal(tg, want_tg), "eval targets differ")
            lens = batch["label_mask"].sum(1)
            check(int((lens == Te).sum()) > 0 and int((lens < Te).sum()) > 0,
                  "eval test data lacks long or short documents")

        # 7. Bad input through the CLI: exit 1 and a message naming the file (never a crash).
        odd = os.path.join(tmp, "odd.npy")
        open(odd, "wb").write(b"\0" * 4 * T + b"\0\0")
        badv = os.path.join(tmp, "badvocab.npy")
        v = np.zeros(3 * T, dtype="<u4")
        v[T + 5] = VOCAB
        v.tofile(badv)
        short = os.path.join(tmp, "short.npy")
        np.zeros(T - 1, dtype="<u4").tofile(short)
        badmix = os.path.join(tmp, "badmix.txt")
        open(badmix, "w").write(f"a,{os.path.basename(paths[0])}\nb,missing/part-9.npy\n")
        for args, needles in (
                ([odd], ["odd.npy", "multiple of 4"]),
                ([badv], ["badvocab.npy", f"token offset {T + 5}", str(VOCAB)]),
                ([short], ["short.npy", "empty"]),
                (["--mix", badmix, "--data-root", tmp], ["badmix.txt:2", "missing/part-9.npy"])):
            r = subprocess.run([OLMO, "data", "info", *args, "--seq-len", str(T)],
                               capture_output=True, text=True)
            check(r.returncode == 1 and all(n in r.stderr for n in needles),
                  f"bad input {args}: rc={r.returncode} stderr={r.stderr!r}")

    finish("OLMo-core parity")


if __name__ == "__main__":
    main()
