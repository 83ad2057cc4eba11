"""Parity of olmo.cpp's OLMo 3 model with Hugging Face transformers' Olmo3ForCausalLM.

Builds tiny random fp32 Olmo3ForCausalLM models (eager attention; an MHA variant, a GQA
variant saved sharded, and a "wide" one: MLP 3072, vocabulary 20000 (several of gemm_micro's
nc panels and kc blocks); >= 4 layers so sliding and full layers
both occur; sliding_window smaller than the sequence), saves each with save_pretrained,
computes logits, loss and every parameter's gradient in PyTorch for a fixed batch, then runs
`olmo logits` (which loads the directory by HF tensor names with our own safetensors reader) and
compares:
  logits rel L2 <= 1e-5, batch and per-sequence loss rel <= 1e-6, each gradient rel L2 <= 1e-4,
under every ISA path (OLMO_ISA=scalar/avx2/avx512), and the ISA paths against each other: the
same bits (logits and every gradient; docs/invariance.md). That each path really ran is checked
by its report (stderr "isa: X"): the ISA OLMO_ISA asks for, capped at what /proc/cpuinfo offers
(an ignored OLMO_ISA fails).
A path the CPU lacks is announced as "NOT RUN here: ... (this CPU lacks AVX-512)"
(tests/check_skips.py).
Env: OLMO_BIN (the olmo binary). Exit code 0 = pass.
"""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import torch
from safetensors.numpy import load_file
from transformers import Olmo3Config, Olmo3ForCausalLM

import olmo_test as ot
from olmo_test import check, check_le, finish
from olmo_test import cpu_features as cf

BIN = ot.bin_path()
ISAS = cf.ISAS
torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))


def rel_l2(a, b):
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


def cpu_isa():
    """The best ISA of this CPU read from /proc/cpuinfo (independent of src/core/cpu.cpp)."""
    return cf.cpu_isa()


def expected_isa(isa):
    return min(isa, cpu_isa(), key=ISAS.index)


def run(args, isa):
    env = dict(os.environ, OLMO_ISA=isa)
    r = subprocess.run([BIN, "logits", *args], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"olmo logits {' '.join(args)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    m = re.search(r"^isa: (\w+)", r.stderr, re.M)
    used = m.group(1) if m else None
    check(used == expected_isa(isa), f"OLMO_ISA={isa} ran {expected_isa(isa)}", f"used {used}")
    return r.stdout


def variant(tmp, name, heads, kv, hidden, layers, inter, window, vocab, B, T, shard, seed):
    print(f"variant {name}: hidden {hidden}, {layers} layers, heads {heads}/{kv}, "
          f"window {window}, vocab {vocab}, batch {B}x{T}")
    torch.manual_seed(seed)
    cfg = Olmo3Config(vocab_size=vocab, hidden_size=hidden, intermediate_size=inter,
                      num_hidden_layers=layers, num_attention_heads=heads,
                      num_key_value_heads=kv, sliding_window=window, max_position_embeddings=64,
                      rms_norm_eps=1e-6, pad_token_id=None, eos_token_id=None,
                      attn_implementation="eager")
    assert "sliding_attention" in cfg.layer_types and "full_attention" in cfg.layer_types
    model = Olmo3ForCausalLM(cfg).float()
    # Larger-than-default weights so attention is far from uniform; random norm weights so the
    # weight application of every RMSNorm is exercised.
    with torch.no_grad():
        for n, p in model.named_parameters():
            if p.dim() == 1:
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            else:
                p.copy_(0.15 * torch.randn_like(p))
    d = os.path.join(tmp, name)
    model.save_pretrained(d, max_shard_size="40KB" if shard else "10GB")
    if shard:
        assert os.path.exists(os.path.join(d, "model.safetensors.index.json")), "not sharded"

    ids = torch.randint(0, vocab, (B, T), generator=torch.Generator().manual_seed(seed + 1))
    out = model(input_ids=ids, labels=ids)
    out.loss.backward()
    logits = out.logits.detach().numpy()
    loss = float(out.loss.detach())
    per_seq = [float(torch.nn.functional.cross_entropy(out.logits[b, :-1], ids[b, 1:]))
               for b in range(B)]
    grads = {n: p.grad.numpy() for n, p in model.named_parameters()}

    tok = os.path.join(d, "tokens.txt")
    with open(tok, "w") as f:
        for b in range(B):
            f.write(" ".join(str(int(t)) for t in ids[b]) + "\n")
    ours = {}
    for isa in ISAS:
        print(f" OLMO_ISA={isa}")
        lo = os.path.join(d, f"logits_{isa}.bin")
        go = os.path.join(d, f"grads_{isa}.safetensors")
        run(["--model", d, "--tokens", tok, "--out", lo], isa)
        out_g = run(["--model", d, "--tokens", tok, "--grads", go], isa)
        out_l = run(["--model", d, "--tokens", tok, "--loss"], isa)
        L = np.fromfile(lo, dtype="<f4")
        assert L.size == B * T * vocab, (L.size, B * T * vocab)
        L = L.reshape(B, T, vocab)
        check_le(f"{name}/{isa} logits rel L2", rel_l2(L, logits), 1e-5)
        m = re.search(r"batch loss ([0-9.eE+-]+)", out_g)
        check_le(f"{name}/{isa} batch loss rel", abs(float(m.group(1)) - loss) / abs(loss), 1e-6)
        seq = [float(x) for x in re.findall(r"loss ([0-9.eE+-]+)", out_l)]
        assert len(seq) == B, out_l
        check_le(f"{name}/{isa} per-sequence loss rel",
              max(abs(s - r) / abs(r) for s, r in zip(seq, per_seq)), 1e-6)
        G = load_file(go)
        assert set(G) == set(grads), sorted(set(G) ^ set(grads))
        worst = max(grads, key=lambda n: rel_l2(G[n], grads[n]))
        check_le(f"{name}/{isa} worst gradient rel L2 ({worst})", rel_l2(G[worst], grads[worst]),
              1e-4)
        ours[isa] = (L, G)
    # The ISA paths against each other: the same bits (every kernel is ISA-invariant).
    for isa in ISAS[:-1]:
        L, G = ours[isa]
        L2, G2 = ours[ISAS[-1]]
        check(L.tobytes() == L2.tobytes(), f"{name} logits {isa} vs {ISAS[-1]} bitwise equal")
        diff = [n for n in G if G[n].tobytes() != G2[n].tobytes()]
        check(not diff, f"{name} grads {isa} vs {ISAS[-1]} bitwise equal (differ: {diff[:4]})")


def main():
    for isa in ISAS[ISAS.index(cpu_isa()) + 1:]:
        cf.not_run(f"the {isa} path (OLMO_ISA={isa} runs {cpu_isa()} here: only the clamp is "
                   "checked)", cf.lacks(isa))
    with tempfile.TemporaryDirectory(prefix="olmo_parity_") as tmp:
        variant(tmp, "mha", heads=4, kv=4, hidden=64, layers=4, inter=96, window=5, vocab=97,
                B=2, T=16, shard=False, seed=1)
        variant(tmp, "gqa", heads=6, kv=2, hidden=48, layers=5, inter=80, window=6, vocab=131,
                B=3, T=13, shard=True, seed=2)
        # MLP width 3072 and vocab 20000 (hidden 32): GEMMs over several gemm_micro panels.
        variant(tmp, "wide", heads=2, kv=2, hidden=32, layers=4, inter=3072, window=5,
                vocab=20000, B=2, T=12, shard=False, seed=3)
    finish("parity")


if __name__ == "__main__":
    main()
