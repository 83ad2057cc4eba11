#!/usr/bin/env python3
"""Writes the seed corpus of the libFuzzer targets (tests/fuzz/corpus/<parser>/): a few small,
valid inputs per parser (plus the odd near-valid one), so the fuzzers start from deep inside each
format and `make test` replays them. Standard library only (zstd seeds use the `zstd` CLI when it
is installed). Deterministic: rerunning it rewrites the same bytes.
Usage: python3 tests/fuzz/make_corpus.py"""
import base64
import gzip
import json
import os
import shutil
import struct
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))


def put(parser, name, data):
    d = os.path.join(HERE, "corpus", parser)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def gz(b):
    return gzip.compress(b, compresslevel=6, mtime=0)


def zst(b):
    if not shutil.which("zstd"):
        return None
    return subprocess.run(["zstd", "-q", "-c", "-3"], input=b, stdout=subprocess.PIPE,
                          check=True).stdout


# ---- YAML training config
with open(os.path.join(SRC, "tests", "configs", "tiny.yaml")) as f:
    tiny = f.read()
put("yaml_config", "tiny.yaml", tiny)
put("yaml_config", "override.yaml", "#= optim.lr=1e-3\n" + tiny)
put("yaml_config", "anchors.yaml",
    "name: a\nmodel: &m\n  d_model: 64\n  n_layers: 2\n  n_heads: 2\n  vocab_size: 512\n"
    "  window_pattern: [8, -1]\neval:\n  sets: {val: tokens/val.npy, ood: x.npy}\n")
put("yaml_config", "preset.yaml",
    "model:\n  preset: olmo3-190m\ndata:\n  seq_len: 2048\n  global_batch_tokens: 4194304\n"
    "  micro_batch_tokens: 8192\noptim:\n  lr: 4.0e-4\nscheduler:\n  name: linear_with_warmup\n  warmup_steps: 2000\n")

# ---- HF config.json
hf = {
    "architectures": ["Olmo3ForCausalLM"], "model_type": "olmo3", "attention_bias": False,
    "hidden_act": "silu", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 4,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 512,
    "rms_norm_eps": 1e-6, "max_position_embeddings": 256, "tie_word_embeddings": False,
    "pad_token_id": None, "eos_token_id": None, "bos_token_id": None,
    "layer_types": ["sliding_attention"] * 3 + ["full_attention"], "sliding_window": 16,
    "rope_theta": 500000.0,
}
put("hf_config", "tiny.json", json.dumps(hf, indent=2))
hf2 = dict(hf)
del hf2["num_key_value_heads"], hf2["head_dim"], hf2["layer_types"], hf2["sliding_window"]
put("hf_config", "minimal.json", json.dumps(hf2))
hf3 = dict(hf)
hf3["rope_parameters"] = {
    "full_attention": {"rope_type": "yarn", "rope_theta": 500000.0, "factor": 8.0,
                       "original_max_position_embeddings": 64, "beta_fast": 32.0,
                       "beta_slow": 1.0, "attention_factor": 1.2079},
    "sliding_attention": {"rope_type": "default", "rope_theta": 500000.0}}
put("hf_config", "yarn.json", json.dumps(hf3))


# ---- safetensors
def safetensors(tensors, meta=None):
    header, data = {}, b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if meta is not None:
        header["__metadata__"] = meta
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + data


f32 = struct.pack("<6f", 1, -2, 0.5, 3, 4, -0.25)
put("safetensors", "two.safetensors", safetensors(
    [("a", "F32", [2, 3], f32), ("b", "BF16", [2], b"\x80\x3f\x00\xc0")], {"format": "pt"}))
put("safetensors", "dtypes.safetensors", safetensors(
    [("h", "F16", [2], b"\x00\x3c\x00\xc0"), ("d", "F64", [1], struct.pack("<d", 2.5)),
     ("i", "I64", [1], struct.pack("<q", 7)), ("u", "U8", [3], b"\x01\x02\x03"),
     ("z", "F32", [0, 4], b""), ("s", "F32", [], struct.pack("<f", 9))]))
put("safetensors", "empty.safetensors", safetensors([]))

# ---- tokenizer.json (byte-level BPE, the layout tests/tokenizer/tokenizer_test.cpp uses)
CL100K = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*"""
          r"""|\s*[\r\n]|\s+(?!\S)|\s+""")


def byte_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


B2U = byte_to_unicode()


def bl(s):
    return "".join(B2U[b] for b in s.encode())


def hf_tok(ignore_merges, bytelevel_regex=False):
    vocab = {B2U[b]: b for b in range(256)}
    vocab[bl("ab")] = 256
    vocab[bl("abc")] = 257
    vocab[bl("xyz")] = 258
    vocab[bl(" a")] = 259
    if bytelevel_regex:
        pre = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
               "use_regex": True}
    else:
        pre = {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": CL100K}, "behavior": "Isolated",
             "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
             "use_regex": False}]}
    return {
        "version": "1.0",
        "added_tokens": [{"id": 100257, "content": "<|endoftext|>", "special": True},
                         {"id": 300, "content": "<|pad|>", "special": True}],
        "normalizer": None, "pre_tokenizer": pre,
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": ignore_merges,
                  "vocab": vocab,
                  "merges": [bl("a") + " " + bl("b"), [bl("ab"), bl("c")],
                             bl(" ") + " " + bl("a")]}}


put("tokenizer_json", "small.json", json.dumps(hf_tok(False)))
put("tokenizer_json", "ignore_merges.json", json.dumps(hf_tok(True)))
put("tokenizer_json", "gpt2_regex.json", json.dumps(hf_tok(False, True)))


# ---- .tiktoken
def ranks(extra):
    toks = [bytes([b]) for b in range(256)] + [e.encode() for e in extra]
    return "".join(base64.b64encode(t).decode() + " " + str(i) + "\n" for i, t in enumerate(toks))


put("tiktoken", "small.tiktoken", ranks(["ab", "abc", "  "]))
put("tiktoken", "crlf.tiktoken", ranks(["he", "hel", "hell", "hello"]).replace("\n", "\r\n"))

# ---- JSONL (first byte: 0 plain, 1 raw .gz, 2 raw .zst, 3 plain text gzipped by the harness)
docs = ("".join(json.dumps({"id": f"d{i}", "source": "s", "text": t}) + "\n"
                for i, t in enumerate(["Hello world.", "caf\u00e9 \u4e2d\u6587\n\ttab", ""]))
        + "\n" + json.dumps({"id": 42, "text": "numeric id"}) + "\n")
put("jsonl", "plain", b"\x00" + docs.encode())
put("jsonl", "gzip", b"\x01" + gz(docs.encode()))
z = zst(docs.encode())
if z is not None:
    put("jsonl", "zstd", b"\x02" + z)
put("jsonl", "harness_gzip", b"\x03" + docs.encode() + b"{\"text\": 5}\nnot json\n")

# ---- token files (first byte: 0 .npy, 1 raw .csv.gz, 2 CSV text, 3 CSV text checked vs 64 tokens)
put("token_file", "tokens.npy", b"\x00" + struct.pack("<12I", 5, 6, 7, 0, 9, 10, 0, 11, 12, 13, 14, 0))
put("token_file", "bad_id.npy", b"\x00" + struct.pack("<8I", 5, 6, 7, 0, 999, 1000, 0, 4))
csv = '0,10,doc-a\n10,40,"quoted, id"\n40,64,"say ""hi"""\n'
put("token_file", "index.csv.gz", b"\x01" + gz(csv.encode()))
put("token_file", "index.csv", b"\x02" + csv.encode())
put("token_file", "index64.csv", b"\x03" + csv.encode())

# ---- checkpoint (first byte: 0 index verbatim, 1 state verbatim, 2 index with checksums
# filled in by the harness, 3 COMMITTED verbatim); the harness's data file is 256 bytes.
def tensor(name, dtype, gshape, off, lshape, bo, nb):
    return {"name": name, "dtype": dtype, "global_shape": gshape, "offset": off,
            "local_shape": lshape, "file": "tensors-00000.bin", "byte_offset": bo, "nbytes": nb,
            "checksum": "0000000000000000"}


index = {"format": "olmo.cpp-checkpoint", "version": 1, "step": 3,
         "files": {"state.json": {"nbytes": 43, "checksum": "265be69a74e02b8e"}},
         "tensors": [tensor("w", "f32", [4, 4], [0, 0], [4, 4], 64, 64),
                     tensor("m", "f32", [4, 4], [0, 0], [2, 4], 0, 32),
                     tensor("m", "f32", [4, 4], [2, 0], [2, 4], 128, 32),
                     tensor("step", "i64", [], [], [], 192, 8),
                     tensor("u", "u8", [3, 1], [0, 0], [3, 1], 200, 3)]}
put("checkpoint", "index_verbatim", b"\x00" + json.dumps(index).encode())
put("checkpoint", "index_fixed", b"\x02" + json.dumps(index).encode())
put("checkpoint", "state", b"\x01" + json.dumps({"trainer": {"step": 3, "tokens": 1024},
                                                  "loader": {"epoch": 1}}).encode())
put("checkpoint", "marker", b"\x03" + b'{"step":3,"index_checksum":"0123456789abcdef"}')

# ---- token-id lines (olmo logits --tokens)
put("token_lines", "two.txt", "1 2 3 100351\n\n  4\t5 6\r\n")
put("token_lines", "bad.txt", "1 2 x\n")
print("seed corpus written under", os.path.join(HERE, "corpus"))
