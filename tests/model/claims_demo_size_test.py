"""README "The demo": "trains `configs/demo.yaml`: a 27.8M-parameter OLMo 3 (d_model 128, 8
layers, 2 heads of 64, ffn 512, ... dolma2 vocab 100352)", end to end.

  1. configs/demo.yaml (read with PyYAML) has the shape the README states.
  2. Independent count: transformers' Olmo3ForCausalLM built from an Olmo3Config of that shape
     (untied head, on the meta device: no weights allocated) has N parameters, and N rounds to
     the README's figure (27.8M).
  3. `olmo train configs/demo.yaml --dry-run` prints "parameters: N total" with the same N.
Seen red: README's figure changed to 27.9M (a copy of README.md as OLMO_SOURCE_DIR) fails 2; an
OLMO_BIN shim adding model.ffn_hidden=640 to the dry run (another count) fails 3.
Cost: ~3 s (importing transformers).
"""
import os
import re

import torch
import yaml

import olmo_test as ot
from olmo_test import check, finish

SRC = os.environ.get("OLMO_SOURCE_DIR", ".")


def main():
    from transformers import Olmo3Config, Olmo3ForCausalLM
    readme = open(os.path.join(SRC, "README.md"), encoding="utf-8").read()
    m = re.search(r"`configs/demo\.yaml`: a (\d+\.\d)M-parameter OLMo 3\s*\(d_model (\d+), (\d+) "
                  r"layers, (\d+) heads of (\d+), ffn (\d+),", readme)
    if not check(m is not None, "README states the demo model's size and shape"):
        finish("claims_demo_size_test")
    claimed, d, layers, heads, hd, ffn = float(m.group(1)), *map(int, m.groups()[1:])
    vocab = int(re.search(r"dolma2 vocab\s+(\d+)\)", readme).group(1))
    cfg = yaml.safe_load(open(os.path.join(SRC, "configs", "demo.yaml")))["model"]
    check((cfg["d_model"], cfg["n_layers"], cfg["n_heads"], cfg["ffn_hidden"], cfg["vocab_size"])
          == (d, layers, heads, ffn, vocab) and d // cfg["n_heads"] == hd,
          f"configs/demo.yaml has the README's shape: {cfg}")
    hc = Olmo3Config(hidden_size=cfg["d_model"], num_hidden_layers=cfg["n_layers"],
                     num_attention_heads=cfg["n_heads"], num_key_value_heads=cfg["n_kv_heads"],
                     intermediate_size=cfg["ffn_hidden"], vocab_size=cfg["vocab_size"],
                     tie_word_embeddings=False)
    with torch.device("meta"):
        n_ref = sum(p.numel() for p in Olmo3ForCausalLM(hc).parameters())
    check(round(n_ref / 1e6, 1) == claimed,
          f"transformers' Olmo3ForCausalLM of that shape: {n_ref:,} parameters = {claimed}M")
    p = ot.olmo("train", os.path.join(SRC, "configs", "demo.yaml"), "--dry-run")
    ours = re.search(r"parameters: ([\d,]+) total", p.stdout + p.stderr)
    check(ours is not None and int(ours.group(1).replace(",", "")) == n_ref,
          f"`olmo train configs/demo.yaml --dry-run`: {ours.group(0) if ours else None} "
          f"(transformers {n_ref:,})")
    finish("claims_demo_size_test")


if __name__ == "__main__":
    main()
