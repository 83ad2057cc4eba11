"""numpy-order parity: `olmo data global-indices` must equal, bit for bit,
numpy.random.Generator(numpy.random.PCG64(seed + epoch)).shuffle(numpy.arange(N, dtype=numpy.uint32))
(OLMo-core's NumpyFSLDataLoader._build_global_indices with chunk_size 1), for N including 1, 2,
non powers of two and one >= 10^6, several seeds (incl. OLMo 3's 34521 and seeds whose sum with the
epoch exceeds 64 bits), and epochs 1 and 2. Also --no-shuffle gives arange(N).
"""
import os
import tempfile

import numpy as np

from olmo_test import check, finish, olmo


def numpy_order(n, seed, epoch):
    idx = np.arange(n, dtype=np.uint32)
    np.random.Generator(np.random.PCG64(seed + epoch)).shuffle(idx)
    return idx


def ours(tmp, n, seed, epoch, extra=()):
    out = os.path.join(tmp, f"gi_{n}_{seed}_{epoch}.bin")
    olmo("data", "global-indices", "--size", str(n), "--seed", str(seed), "--epoch", str(epoch),
         "--out", out, *extra)
    return np.fromfile(out, dtype="<u4")


def main():
    cases = [(1, 0, 1), (2, 0, 1), (2, 34521, 1), (3, 7, 1), (5, 34521, 2), (10, 1, 1),
             (255, 5, 1), (256, 5, 1), (257, 5, 1), (1000, 34521, 1), (4097, 123, 3),
             (65539, 2**32 - 1, 1), (100_003, 2**63 + 11, 1), (1_000_003, 34521, 1),
             (1_048_576, 1337, 2), (12345, 2**64 - 1, 2)]
    with tempfile.TemporaryDirectory() as tmp:
        for n, seed, epoch in cases:
            want = numpy_order(n, seed, epoch)
            got = ours(tmp, n, seed, epoch)
            ok = got.shape == want.shape and np.array_equal(got, want)
            detail = ""
            if not ok:
                bad = np.nonzero(got != want)[0] if got.shape == want.shape else []
                detail = f"first mismatch at {bad[0] if len(bad) else 'shape'}"
            check(ok, f"N={n} seed={seed} epoch={epoch}", detail)
        got = ours(tmp, 17, 3, 1, extra=["--no-shuffle"])
        check(np.array_equal(got, np.arange(17, dtype=np.uint32)), "--no-shuffle")
        # Bad input: epoch 0 is rejected with an error message, not a crash.
        r = olmo("data", "global-indices", "--size", "4", "--seed", "1", "--epoch", "0",
                 "--out", os.path.join(tmp, "x"), check=False)
        ok = r.returncode == 1 and "epoch" in r.stderr
        check(ok, "epoch 0 rejected cleanly", "" if ok else f"{r.returncode} {r.stderr}")
    finish("numpy order (all cases bit-identical)")


if __name__ == "__main__":
    main()
