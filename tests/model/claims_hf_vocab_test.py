"""README "Export to Hugging Face": "The vocabulary stays at the model's 100352 rows unless
`--hf-vocab` slices it to the tokenizer's 100278 (as released checkpoints)", end to end.

tests/configs/tiny.yaml with the real vocabulary (model.vocab_size=100352), seed 3, exported twice by
`olmo export --config`: as it is (FULL) and with --hf-vocab (SLICED). Independent readers:
PyPI safetensors, transformers (AutoModelForCausalLM / AutoTokenizer, eager, fp32, offline).
  1. FULL keeps 100352 rows (config.json vocab_size, embed_tokens, lm_head).
  2. SLICED: config.json vocab_size 100278 = len(AutoTokenizer) of the exported tokenizer;
     embed_tokens / lm_head are [100278, 64] and equal FULL's first 100278 rows bit for bit;
     every other tensor equals FULL's.
  3. transformers on SLICED gives FULL's logits without the padding columns (rel. L2 <= 1e-6);
     on text the exported tokenizer encodes (a special id among them).
  4. import: `olmo logits --model SLICED` equals transformers on SLICED (rel. L2 <= 1e-5),
     100278 columns; `olmo export` of a 512-vocab model with --hf-vocab (the tokenizer is
     larger than the model) is refused with a clear message.
Seen red: with `opt.vocab_rows = ...` removed from cli/export.cpp (--hf-vocab a no-op), 2 fails.
Cost: ~10 s (two exports of a 6.5M-parameter model, transformers forwards).
"""
import json
import os
import shutil
import tempfile

import numpy as np
import torch

import olmo_test as ot
from olmo_test import check, finish
from olmo_test import tiny_data as td
from olmo_test.refs import load_hf

torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
V_MODEL, V_TOK = 100352, 100278


def rel_l2(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def tensors(d):
    from safetensors.numpy import load_file
    out = {}
    for f in sorted(os.listdir(d)):
        if f.endswith(".safetensors"):
            out.update(load_file(os.path.join(d, f)))
    return out


def main():
    from transformers import AutoTokenizer
    tmp = tempfile.mkdtemp(prefix="olmo_hf_vocab_")
    try:
        full, sliced = os.path.join(tmp, "full"), os.path.join(tmp, "sliced")
        base = ["export", "--config", td.tiny_config(), f"model.vocab_size={V_MODEL}", "--seed", "3"]
        ot.olmo(*base, "--out", full)
        ot.olmo(*base, "--hf-vocab", "--out", sliced)
        cf = json.load(open(os.path.join(full, "config.json")))
        cs = json.load(open(os.path.join(sliced, "config.json")))
        tf, ts = tensors(full), tensors(sliced)
        heads = ("model.embed_tokens.weight", "lm_head.weight")
        check(cf["vocab_size"] == V_MODEL and all(tf[k].shape[0] == V_MODEL for k in heads),
              f"without --hf-vocab: {V_MODEL} rows (config {cf['vocab_size']}, "
              f"{[tf[k].shape for k in heads]})")
        tok = AutoTokenizer.from_pretrained(sliced, local_files_only=True)
        check(cs["vocab_size"] == V_TOK == len(tok),
              f"--hf-vocab: config.json vocab_size {cs['vocab_size']} = len(tokenizer) {len(tok)} "
              f"= {V_TOK}")
        check(all(ts[k].shape == (V_TOK, 64) for k in heads),
              f"--hf-vocab: embed_tokens / lm_head {[ts[k].shape for k in heads]}")
        check(all(ts[k].shape[0] == V_TOK and np.array_equal(ts[k], tf[k][:V_TOK]) for k in heads),
              "sliced rows == the full export's first rows, bit for bit")
        others = sorted(set(tf) - set(heads))
        check(sorted(set(ts) - set(heads)) == others and
              all(np.array_equal(ts[k], tf[k]) for k in others),
              f"the other {len(others)} tensors equal")

        text = "Hello world, this is olmo.cpp.<|endoftext|>Second document: 12345"
        ids = tok(text)["input_ids"]
        check(V_TOK - 100 < max(ids) < V_TOK, f"the text's ids include a special id ({max(ids)})")
        x = torch.tensor([ids])
        ms = load_hf(sliced)
        mf = load_hf(full)
        with torch.no_grad():
            ls = ms(input_ids=x).logits[0].numpy()
            lf = mf(input_ids=x).logits[0].numpy()
        e = rel_l2(ls, lf[:, :V_TOK])
        check(ls.shape == (len(ids), V_TOK) and e <= 1e-6,
              f"transformers: sliced logits {ls.shape} == full's first {V_TOK} columns (rel L2 {e:.1e})")

        tf_path, out = os.path.join(tmp, "tokens.txt"), os.path.join(tmp, "logits.f32")
        with open(tf_path, "w") as f:
            f.write(" ".join(map(str, ids)) + "\n")
        ot.olmo("logits", "--model", sliced, "--tokens", tf_path, "--out", out)
        ours = np.fromfile(out, dtype=np.float32)
        ok = ours.size == len(ids) * V_TOK
        e = rel_l2(ours.reshape(len(ids), V_TOK), ls) if ok else float("inf")
        check(ok and e <= 1e-5, f"import: `olmo logits` on the sliced dir = transformers "
              f"({ours.size} values, rel L2 {e:.1e})")

        p = ot.olmo("export", "--config", td.tiny_config(), "--seed", "3", "--hf-vocab",
                    "--out", os.path.join(tmp, "small"), check=False)
        msg = (p.stdout + p.stderr).strip().splitlines()
        check(p.returncode != 0 and "vocab" in (p.stdout + p.stderr).lower(),
              f"--hf-vocab on a 512-row model is refused (rc {p.returncode}): {msg[-1:] }")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish("claims_hf_vocab_test")


if __name__ == "__main__":
    main()
