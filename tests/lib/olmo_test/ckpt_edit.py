"""olmo_test.ckpt_edit: planting changes in a checkpoint dir (src/ckpt/checkpoint.h's format) for
the tests that must catch them: a tensor element rewritten or one bit of it flipped, a state
section rewritten, and -- so that only the bits (or the fingerprints) can tell -- the piece
checksums, index.json and COMMITTED resealed to match. XXH3-64 comes from Debian's libxxhash
(ctypes), the library our writer uses, independent of our code.
"""
import ctypes
import ctypes.util
import json
import os
import struct

_xxh = ctypes.CDLL(ctypes.util.find_library("xxhash") or "libxxhash.so.0")
_xxh.XXH3_64bits.restype = ctypes.c_uint64
_xxh.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]


def xxh(b):
    return f"{_xxh.XXH3_64bits(b, len(b)):016x}"


def reseal(d, index):
    """Writes index.json and a COMMITTED marker that match it."""
    text = json.dumps(index, indent=1)
    open(os.path.join(d, "index.json"), "w").write(text)
    open(os.path.join(d, "COMMITTED"), "w").write(json.dumps(
        {"step": index["step"], "index_checksum": xxh(text.encode())}))


def _edit_element(d, name, element, edit, seal):
    """Rewrites element `element` of the first piece of tensor `name` (f32) as edit(bits) and,
    with seal, its piece checksum, index.json and COMMITTED to match. Returns (old, new) bits."""
    index = json.load(open(os.path.join(d, "index.json")))
    t = [t for t in index["tensors"] if t["name"] == name][0]
    assert t["dtype"] == "f32" and 4 * element < t["nbytes"], t
    with open(os.path.join(d, t["file"]), "r+b") as f:
        f.seek(t["byte_offset"] + 4 * element)
        (old,) = struct.unpack("<I", f.read(4))
        new = edit(old)
        f.seek(t["byte_offset"] + 4 * element)
        f.write(struct.pack("<I", new))
        f.seek(t["byte_offset"])
        t["checksum"] = xxh(f.read(t["nbytes"]))
    if seal:
        reseal(d, index)
    return old, new


def tamper_tensor(d, name):
    """The tensor's first element x of its first piece becomes 1.5 x + 1e-3, resealed."""
    def edit(bits):
        (x,) = struct.unpack("<f", struct.pack("<I", bits))
        return struct.unpack("<I", struct.pack("<f", x * 1.5 + 1e-3))[0]
    _edit_element(d, name, 0, edit, True)


def flip_bit(d, name, element, bit=0, seal=True):
    """Flips bit `bit` (0 = the last mantissa bit) of element `element` of the first piece of
    tensor `name`; seal: checksums, index.json and COMMITTED rewritten to match (only the bits
    tell), else the piece's checksum no longer matches. Returns (old, new) bits."""
    return _edit_element(d, name, element, lambda b: b ^ (1 << bit), seal)


def tamper_state(d, section, mutate):
    """mutate(state.json[section]) in place, state.json's checksum and the seal rewritten."""
    index = json.load(open(os.path.join(d, "index.json")))
    st = json.load(open(os.path.join(d, "state.json")))
    mutate(st[section])
    text = json.dumps(st).encode()
    open(os.path.join(d, "state.json"), "wb").write(text)
    index["files"]["state.json"] = {"nbytes": len(text), "checksum": xxh(text)}
    reseal(d, index)
