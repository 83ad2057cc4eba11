"""Greedy generation (src/eval/generate.cpp: KV cache, batched decode, sliding-window rings)
against an independent reference: transformers' Olmo3ForCausalLM generate() (eager, fp32) on the
same weights, both the token ids and the logits row every new token was chosen from.

The model is tests/configs/tiny.yaml (d 64, 4 layers, GQA 4/2, window 16 on layers 0-2, context 64,
vocab 512) initialised with a seed and written by `olmo export --config ... --no-tokenizer`;
once with plain RoPE, once with YaRN (factor 4 over a 16-token old context, full-attention
layers). Ours: `olmo generate --prompt-ids` with three prompts of 3, 10 and 21 tokens as one
batch, 40 new tokens each (decoding crosses the 16-token window, reaches position 60 of 64),
`--logits-out` writing each new token's logits row. Reference: each prompt alone through
generate(do_sample=False, output_logits=True).
Checks: token ids equal, token for token; per prompt, the rel L2 of all its step-logit rows
(ours vs transformers) <= LOGIT_TOL = 3e-6: measured worst 7.1e-7 (2026-12-03, this machine,
AVX-512; plain RoPE 6.9e-7, YaRN 7.1e-7), about 4x margin for other CPUs' GEMM blocking.
Env: OLMO_BIN, OLMO_SOURCE_DIR. Exit 0 = pass.
"""
import json
import os
import tempfile

import numpy as np
import torch

from olmo_test import check, finish, olmo

SRC = os.environ.get("OLMO_SOURCE_DIR", ".")
torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
LOGIT_TOL = 3e-6
NEW = 40


def rel_l2(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def case(tmp, name, extra):
    d = os.path.join(tmp, name)
    olmo("export", "--config", os.path.join(SRC, "tests", "configs", "tiny.yaml"), *extra, "--seed", "5",
         "--no-tokenizer", "--out", d)
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(d, local_files_only=True, dtype=torch.float32,
                                                 attn_implementation="eager").eval()
    model.generation_config.eos_token_id = None
    V = model.config.vocab_size
    rng = np.random.default_rng(11)
    prompts = [rng.integers(2, V, n).tolist() for n in (3, 10, 21)]
    pf, lf = os.path.join(tmp, name + "_prompts.txt"), os.path.join(tmp, name + "_logits.bin")
    with open(pf, "w") as f:
        for p in prompts:
            f.write(" ".join(map(str, p)) + "\n")
    r = olmo("generate", d, "--prompt-ids", pf, "--tokens", str(NEW), "--eos", "-1", "--json",
             "--logits-out", lf)
    ours = [json.loads(l) for l in r.stdout.splitlines() if l.strip()]
    rows = np.fromfile(lf, dtype="<f4")
    check(rows.size == len(prompts) * NEW * V, f"{name}: --logits-out holds {rows.size} floats")
    rows = rows.reshape(len(prompts), NEW, V)
    worst = 0.0
    for i, p in enumerate(prompts):
        with torch.no_grad():
            out = model.generate(input_ids=torch.tensor([p]), attention_mask=torch.ones(1, len(p), dtype=torch.long),
                                 max_new_tokens=NEW, do_sample=False, output_logits=True,
                                 return_dict_in_generate=True, pad_token_id=1)
        ref_ids = out.sequences[0, len(p):].tolist()
        ref_logits = torch.stack([x[0] for x in out.logits]).numpy()
        got = ours[i]["ids"]
        k = next((j for j in range(min(len(got), len(ref_ids))) if got[j] != ref_ids[j]), None)
        check(got == ref_ids, f"{name}: prompt {i} ({len(p)} tokens, batch of 3): {NEW} greedy "
              f"tokens == transformers generate()" + ("" if k is None else f" (first diff at {k})"))
        e = rel_l2(rows[i], ref_logits)
        worst = max(worst, e)
        check(e <= LOGIT_TOL, f"{name}: prompt {i}: step logits rel L2 {e:.2e} <= {LOGIT_TOL:g}")
    print(f"{name}: worst step-logit rel L2 {worst:.2e}")


def main():
    with tempfile.TemporaryDirectory(prefix="olmo_genpar_") as tmp:
        case(tmp, "rope", [])
        case(tmp, "yarn", ["model.yarn_factor=4", "model.yarn_old_context_len=16"])
    finish("generate parity")


if __name__ == "__main__":
    main()
