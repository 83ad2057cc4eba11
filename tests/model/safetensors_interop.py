"""Interop of our C++ safetensors reader/writer with the `safetensors` PyPI package.
  write PATH   write a file with the package: one tensor per dtype, values from value(dtype, i)
  check PATH   read a file written by our C++ writer with the package and verify its contents
Both sides use the same deterministic contents (mirrored in safetensors_test.cpp):
  tensor "t_<DTYPE>" shape [3, 5] (BOOL: [2, 3]); element i = value(i) cast to the dtype, where
  value(i) = (i * 37 % 23) - 11 for ints, (i - 7) * 0.375 for floats, i % 3 == 0 for BOOL;
  metadata {"format": "pt", "who": <writer name>}.
"""
import sys

import numpy as np
from safetensors import safe_open

DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64,
          "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}


def expected():
    out = {}
    for name, dt in DTYPES.items():
        if name == "BOOL":
            out["t_BOOL"] = (np.arange(6) % 3 == 0).reshape(2, 3)
        elif name.startswith("F"):
            out["t_" + name] = ((np.arange(15) - 7) * 0.375).astype(dt).reshape(3, 5)
        else:
            out["t_" + name] = ((np.arange(15) * 37 % 23) - 11).astype(dt).reshape(3, 5)
    return out


BF16 = (1.5 * (np.arange(4) - 2)).reshape(2, 2)  # exact in bf16


def main():
    mode, path = sys.argv[1], sys.argv[2]
    import torch
    from safetensors.torch import save_file as save_torch
    if mode == "write":  # through torch so that BF16 can be written too
        t = {k: torch.from_numpy(v) for k, v in expected().items()}
        t["t_BF16"] = torch.tensor(BF16, dtype=torch.bfloat16)
        save_torch(t, path, metadata={"format": "pt", "who": "python"})
        return
    with safe_open(path, framework="np") as f:  # numpy has no bfloat16: read that one below
        names = set(f.keys())
        got = {k: f.get_tensor(k) for k in names if k != "t_BF16"}
    want = expected()
    assert names == set(want) | {"t_BF16"}, sorted(names)
    for k, v in want.items():
        assert got[k].dtype == v.dtype and got[k].shape == v.shape, (k, got[k].dtype, got[k].shape)
        assert np.array_equal(got[k], v), k
    with safe_open(path, framework="pt") as f:  # BF16 through torch
        bf = f.get_tensor("t_BF16").float().numpy()
        assert f.metadata() == {"format": "pt", "who": "cpp"}, f.metadata()
    assert np.array_equal(bf, BF16), bf
    print("python read the C++ file: ok")


if __name__ == "__main__":
    main()
