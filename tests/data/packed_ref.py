"""References for tests/data/packed_dataset_test.cpp from OLMo-core's own NumpyPackedFSLDataset
(PyPI ai2-olmo-core), built through NumpyPackedFSLDatasetConfig exactly as the stage-3 config
does (generate_doc_lengths, source_group_size, source_permutation_seed, dtype uint32,
long_doc_strategy truncate).

Writes token files and OLMo-core's instances for two cases under DIR/<case>/:
  distinct  all document lengths differ (one document longer than seq_len, truncated), so the
            packing has no ties: instances must be equal;
  ties      many equal lengths (numpy's unstable argsort orders ties by its SIMD sort).
Files: part-<k>.npy (raw uint32; some end with tokens after the last EOS), ref.json with
{"seq_len", "group", "perm_seed", "eos", "pad", "vocab", "files" (the given order),
 "order" (basenames after OLMo-core's permutation), "fingerprint", "num_instances",
 "label_len" [N], "doc_lens" [[...]...]}, instances.i32 [N, seq_len].
Usage: packed_ref.py DIR
"""
import json
import logging
import os
import sys

import numpy as np

logging.disable(logging.WARNING)
from olmo_core.data import NumpyDatasetDType, TokenizerConfig  # noqa: E402
from olmo_core.data.numpy_dataset import NumpyPackedFSLDatasetConfig  # noqa: E402

VOCAB, EOS, PAD, T = 100278, 100257, 100277, 256


def write_files(d, groups_of_lengths, group, rng):
    """Documents of the given lengths (EOS-terminated) into files, `group` files per group."""
    paths = []
    k = 0
    for lengths in groups_of_lengths:
        split = np.array_split(np.array(lengths), group)
        for part in split:
            toks = []
            for n in part:
                toks.append(rng.integers(0, 100000, int(n) - 1, dtype=np.uint32))
                toks.append(np.array([EOS], np.uint32))
            if k % 2 == 1:  # trailing tokens without EOS: dropped by OLMo-core
                toks.append(rng.integers(0, 100000, 7, dtype=np.uint32))
            p = os.path.join(d, f"part-{k}.npy")
            np.concatenate(toks).astype("<u4").tofile(p)
            paths.append(p)
            k += 1
    return paths


def case(root, name, groups_of_lengths, group, seed):
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(len(name))
    paths = write_files(d, groups_of_lengths, group, rng)
    cfg = NumpyPackedFSLDatasetConfig(
        paths=paths, sequence_length=T, generate_doc_lengths=True, source_group_size=group,
        source_permutation_seed=seed, dtype=NumpyDatasetDType.uint32,
        tokenizer=TokenizerConfig(vocab_size=VOCAB, eos_token_id=EOS, pad_token_id=PAD),
        work_dir=os.path.join(d, "work"))
    ds = cfg.build()
    ds.prepare()
    n = len(ds)
    inst = np.zeros((n, T), np.int32)
    label_len, doc_lens = [], []
    for i in range(n):
        it = ds[i]
        inst[i] = it["input_ids"].numpy()
        m = it["label_mask"].numpy()
        label_len.append(int(m.sum()))
        assert m[: label_len[-1]].all(), "label mask is not a prefix"
        doc_lens.append([int(x) for x in it["doc_lens"].tolist()])
    inst.tofile(os.path.join(d, "instances.i32"))
    ref = dict(seq_len=T, group=group, perm_seed=seed, eos=EOS, pad=PAD, vocab=VOCAB,
               files=[os.path.basename(p) for p in paths],
               order=[os.path.basename(p) for p in ds.paths], fingerprint=ds.fingerprint,
               num_instances=n, label_len=label_len, doc_lens=doc_lens)
    with open(os.path.join(d, "ref.json"), "w") as f:
        json.dump(ref, f)
    print(f"{name}: {len(paths)} files, {sum(len(g) for g in groups_of_lengths)} documents, "
          f"{n} instances, padding {n * T - sum(label_len)} tokens")


def main():
    root = sys.argv[1]
    rng = np.random.default_rng(5)
    # 6 files in groups of 2 (after the permutation); all document lengths differ (so every
    # group's do), one document longer than T (truncated to T).
    lengths = [int(x) for x in rng.choice(np.arange(1, T), size=120, replace=False)]
    lengths.insert(3, int(rng.integers(T + 1, 3 * T)))
    distinct = [lengths[:41], lengths[41:81], lengths[81:]]
    case(root, "distinct", distinct, 2, 123)
    ties = [[int(x) for x in rng.choice([5, 17, 64, 100, 128, 200, 256, 300], size=60)]
            for _ in range(3)]
    case(root, "ties", ties, 3, 7)


if __name__ == "__main__":
    main()
