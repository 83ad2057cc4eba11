"""The batches of a tiny run (olmo_test.tiny_data), derived without olmo.cpp: OLMo-core's own
data loader (NumpyFSLDatasetConfig / NumpyDataLoaderConfig, uint32 tokens, one process) and, as a
second statement, numpy alone (OLMo-core's global order: PCG64(seed + epoch).shuffle(arange(N)),
batch b = order[b*G:(b+1)*G]; tests/data/numpy_order.py checks ours against the same formula).

batches(token_files, seq_len, global_batch_instances, seed, vocab, eos, pad, steps) returns one
list of instance indices per step (epoch 1 only: the tests stay inside it) after asserting that
OLMo-core's loader and the numpy statement agree.
Cost: a fraction of a second for a few hundred instances.
"""
import logging
import os
import tempfile

import numpy as np

logging.disable(logging.WARNING)


def numpy_batches(n_instances, global_batch_instances, seed, steps, epoch=1):
    order = np.arange(n_instances, dtype=np.uint32)
    np.random.Generator(np.random.PCG64(seed + epoch)).shuffle(order)
    G = global_batch_instances
    assert steps * G <= n_instances, f"{steps} steps of {G} exceed one epoch of {n_instances}"
    return [order[s * G:(s + 1) * G].astype(np.int64).tolist() for s in range(steps)]


def olmo_core_batches(token_files, seq_len, global_batch_instances, seed, vocab, eos, pad, steps):
    from olmo_core.data import (NumpyDataLoaderConfig, NumpyDatasetDType, NumpyFSLDatasetConfig,
                                TokenizerConfig)
    with tempfile.TemporaryDirectory(prefix="olmo_core_order_") as work:
        ds = NumpyFSLDatasetConfig(
            sequence_length=seq_len, paths=list(token_files),
            tokenizer=TokenizerConfig(vocab_size=vocab, eos_token_id=eos, pad_token_id=pad),
            dtype=NumpyDatasetDType.uint32, work_dir=work).build()
        ds.prepare()
        dl = NumpyDataLoaderConfig(global_batch_size=global_batch_instances * seq_len, seed=seed,
                                   work_dir=work, num_workers=0).build(ds)
        dl.reshuffle(epoch=1)
        out = []
        for b in dl:
            out.append(b["index"].tolist())
            if len(out) == steps:
                break
        n = len(ds)
    assert len(out) == steps, f"OLMo-core's loader gave {len(out)} batches, wanted {steps}"
    return out, n


def batches(token_files, seq_len, global_batch_instances, seed, vocab, eos, pad, steps):
    oc, n = olmo_core_batches(token_files, seq_len, global_batch_instances, seed, vocab, eos, pad,
                              steps)
    npy = numpy_batches(n, global_batch_instances, seed, steps)
    assert oc == npy, "OLMo-core's loader and the numpy statement of its order disagree"
    return oc


def token_files(data_root):
    """The training file tiny_data.make_data writes (mix train.mix)."""
    return [os.path.join(data_root, "train", "part-0.npy")]
