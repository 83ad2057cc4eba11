"""Independent reference for fp32 <-> bf16 conversion (tests/kernels/bf16_test.cpp): PyTorch's
own conversion, torch.tensor(x).to(torch.bfloat16) and .to(torch.float32).

Usage: bf16_torch.py OUT_DIR. Writes OUT_DIR/x.f32 (inputs: hand-picked edge cases, then 300,000
random bit patterns of every class, then 100,000 normal values of scale 10), OUT_DIR/y.u16 (torch's
bf16 bits of each), OUT_DIR/all.f32 (torch's fp32 value of each of the 65,536 bf16 bit patterns).
Edge cases: +-0, +-1, ties to even at several exponents (0x3f808000 -> down, 0x3f818000 -> up),
one ulp either side of a tie, +-inf, quiet/signalling NaNs of both signs and several payloads,
the largest float (rounds to inf), the largest float that stays finite (0x7f7f7fff), the tie
just below inf (0x7f7f8000 -> inf), denormals (smallest, ties 0x00008000 -> 0 and 0x00018000 ->
0x0002, largest, the tie into the smallest normal 0x007f8000 -> 0x0080), the smallest normal.
"""
import os
import sys

import numpy as np
import torch

EDGE = [0x00000000, 0x80000000, 0x3f800000, 0xbf800000, 0x3f808000, 0x3f818000, 0x3f808001,
        0x3f807fff, 0xbf808000, 0xbf818000, 0x4b808000, 0x4b818000, 0x00808000, 0x00818000,
        0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7f800001, 0xff800001, 0x7fffffff,
        0xffffffff, 0x7fa00000, 0x7f7fffff, 0xff7fffff, 0x7f7f7fff, 0x7f7f8000, 0xff7f8000,
        0x7f7e8000, 0x00000001, 0x80000001, 0x00008000, 0x00018000, 0x00010000, 0x0000ffff,
        0x007fffff, 0x807fffff, 0x007f8000, 0x007f7fff, 0x00800000, 0x80800000]


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(17)
    bits = np.concatenate([np.array(EDGE, dtype=np.uint32),
                           rng.integers(0, 2**32, 300_000, dtype=np.uint64).astype(np.uint32)])
    x = np.concatenate([bits.view(np.float32),
                        (rng.standard_normal(100_000) * 10).astype(np.float32)])
    y = torch.from_numpy(x.copy()).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    every = torch.from_numpy(np.arange(65536, dtype=np.uint16).view(np.int16).copy())
    back = every.view(torch.bfloat16).to(torch.float32).numpy()
    x.astype("<f4").tofile(os.path.join(out, "x.f32"))
    y.astype("<u2").tofile(os.path.join(out, "y.u16"))
    back.astype("<f4").tofile(os.path.join(out, "all.f32"))


if __name__ == "__main__":
    main()
