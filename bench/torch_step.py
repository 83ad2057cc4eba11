#!/usr/bin/env python3
"""PyTorch peer of `olmo bench step`: the same OLMo 3 model, batch and threads, in PyTorch.

Architecture (identical to src/model/olmo3.h and HF Olmo3ForCausalLM): token embedding; per block
q/k/v projections, RMSNorm over the full q and k width (QK-norm before the head split), RoPE
(rotate_half, theta from the config), causal attention with the per-layer sliding window (query i
sees keys i-w+1..i), GQA, o projection, reordered post-norm (h = x + norm(attn(x)),
out = h + norm(mlp(h))), SwiGLU MLP; final RMSNorm; untied lm_head; cross-entropy with
ignore_index -100 plus z-loss 1e-5 * logsumexp^2; no biases. The shape comes from
`olmo info --preset NAME --json`, so both sides build the same model.

PyTorch gets its best settings: torch.set_num_threads(--threads), F.scaled_dot_product_attention
(is_causal=True where the window covers the sequence, which takes the CPU flash kernel; an
explicit boolean band mask otherwise), GQA via enable_gqa, F.rms_norm, optional torch.compile
(--compile), fused AdamW (--optimizer). tcmalloc is preloaded by bench/compare.sh when present.
--precision bf16: the forward (and so the backward) under torch.autocast("cpu", bfloat16) with
fp32 parameters and optimizer (bf16 linear layers and SDPA, loss from logits.float()), as
OLMo 3 trains. --mkldnn on|off: torch.backends.mkldnn.enabled (oneDNN for bf16 matmuls / SDPA
helpers; fp32 matmuls go to MKL either way).
Defaults = the settings that won on this machine (bench/results/precision.md): eager (no
torch.compile), mkldnn on, SDPA, 2 threads, tcmalloc.

Prints one JSON line: tokens_per_second (forward+backward), seconds per step, and with
--optimizer the full-step figures. `--check-hf` first verifies this module against
transformers' Olmo3ForCausalLM (eager attention) on a tiny config with copied weights.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, c, window):
        super().__init__()
        D, H, KV, hd, Fh = c["d_model"], c["n_heads"], c["n_kv_heads"], c["head_dim"], c["ffn_hidden"]
        self.H, self.KV, self.hd, self.window, self.eps = H, KV, hd, window, c["eps"]
        self.q_proj = nn.Linear(D, H * hd, bias=False)
        self.k_proj = nn.Linear(D, KV * hd, bias=False)
        self.v_proj = nn.Linear(D, KV * hd, bias=False)
        self.o_proj = nn.Linear(H * hd, D, bias=False)
        self.q_norm = nn.Parameter(torch.ones(H * hd))
        self.k_norm = nn.Parameter(torch.ones(KV * hd))
        self.gate_proj = nn.Linear(D, Fh, bias=False)
        self.up_proj = nn.Linear(D, Fh, bias=False)
        self.down_proj = nn.Linear(Fh, D, bias=False)
        self.attn_norm = nn.Parameter(torch.ones(D))
        self.ffn_norm = nn.Parameter(torch.ones(D))

    def forward(self, x, cos, sin, mask):
        B, T, _ = x.shape
        eps = self.eps
        q = F.rms_norm(self.q_proj(x), (self.H * self.hd,), self.q_norm, eps)
        k = F.rms_norm(self.k_proj(x), (self.KV * self.hd,), self.k_norm, eps)
        v = self.v_proj(x)
        q = q.view(B, T, self.H, self.hd).transpose(1, 2)
        k = k.view(B, T, self.KV, self.hd).transpose(1, 2)
        v = v.view(B, T, self.KV, self.hd).transpose(1, 2)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        gqa = self.KV != self.H
        if mask is None:
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
        else:
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=gqa)
        o = o.transpose(1, 2).reshape(B, T, self.H * self.hd)
        h = x + F.rms_norm(self.o_proj(o), (x.shape[-1],), self.attn_norm, eps)
        m = self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))
        return h + F.rms_norm(m, (x.shape[-1],), self.ffn_norm, eps)


def rope(x, cos, sin):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


class Olmo3(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.embed = nn.Embedding(c["vocab_size"], c["d_model"])
        self.blocks = nn.ModuleList(Block(c, w) for w in c["layer_window"])
        self.norm = nn.Parameter(torch.ones(c["d_model"]))
        self.lm_head = nn.Linear(c["d_model"], c["vocab_size"], bias=False)
        hd = c["head_dim"]
        # HF default RoPE: fp32 inv_freq, fp32 angles.
        self.register_buffer(
            "inv_freq",
            1.0 / (c["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.float) / hd)),
            persistent=False)

    def rope_tables(self, T):
        freqs = torch.arange(T, dtype=torch.float)[:, None] * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()

    def hidden(self, tokens):
        T = tokens.shape[1]
        cos, sin = self.rope_tables(T)
        masks = {}
        x = self.embed(tokens)
        for blk in self.blocks:
            w = blk.window
            mask = None
            if w and w < T:  # band: j <= i and i - j < w
                if w not in masks:
                    i = torch.arange(T)[:, None]
                    j = torch.arange(T)[None, :]
                    masks[w] = (j <= i) & (i - j < w)
                mask = masks[w]
            x = blk(x, cos, sin, mask)
        return F.rms_norm(x, (x.shape[-1],), self.norm, self.c["eps"])

    def forward(self, tokens, targets, z_coef=1e-5):
        x = self.hidden(tokens)
        logits = self.lm_head(x).view(-1, self.c["vocab_size"]).float()
        t = targets.reshape(-1)
        valid = t != -100
        ce = F.cross_entropy(logits, t, ignore_index=-100, reduction="sum")
        lse = torch.logsumexp(logits, dim=-1)
        z = (lse.pow(2) * valid).sum()
        count = valid.sum().clamp(min=1)
        return (ce + z_coef * z) / count


def init_(model, std=0.02):
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                p.fill_(1.0)
            else:
                nn.init.trunc_normal_(p, std=std, a=-3 * std, b=3 * std)


def load_config(args):
    if args.info_json:
        with open(args.info_json) as f:
            j = json.load(f)
    else:
        olmo = args.olmo_bin or os.environ.get("OLMO_BIN") or os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "..", "build", "olmo")
        out = subprocess.run([olmo, "info", "--preset", args.preset, "--json"], check=True,
                             capture_output=True, text=True).stdout
        j = json.loads(out)
    keys = ["d_model", "n_layers", "n_heads", "n_kv_heads", "head_dim", "ffn_hidden",
            "vocab_size", "layer_window"]
    c = {k: j[k] for k in keys}
    c["rope_theta"] = float(j.get("rope_theta", 500000.0))
    c["eps"] = float(j.get("norm_eps", 1e-6))
    return c


def check_against_hf():
    """Copy this module's weights into HF Olmo3ForCausalLM (eager) and compare logits."""
    from transformers import Olmo3Config, Olmo3ForCausalLM
    c = dict(d_model=64, n_layers=4, n_heads=4, n_kv_heads=2, head_dim=16, ffn_hidden=96,
             vocab_size=300, layer_window=[8, 8, 8, 0], rope_theta=500000.0, eps=1e-6)
    torch.manual_seed(0)
    ours = Olmo3(c)
    init_(ours)
    with torch.no_grad():
        for p in ours.parameters():
            if p.dim() == 1:
                p.add_(0.1 * torch.randn_like(p))
    cfg = Olmo3Config(vocab_size=300, hidden_size=64, intermediate_size=96, num_hidden_layers=4,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                      max_position_embeddings=64, rms_norm_eps=1e-6, sliding_window=8,
                      layer_types=["sliding_attention"] * 3 + ["full_attention"],
                      rope_theta=500000.0, tie_word_embeddings=False,
                      bos_token_id=None, eos_token_id=None, pad_token_id=None,
                      attn_implementation="eager")
    hf = Olmo3ForCausalLM(cfg).float().eval()
    sd = {"model.embed_tokens.weight": ours.embed.weight, "model.norm.weight": ours.norm,
          "lm_head.weight": ours.lm_head.weight}
    for i, b in enumerate(ours.blocks):
        p = f"model.layers.{i}."
        for n in ["q_proj", "k_proj", "v_proj", "o_proj"]:
            sd[p + f"self_attn.{n}.weight"] = getattr(b, n).weight
        sd[p + "self_attn.q_norm.weight"] = b.q_norm
        sd[p + "self_attn.k_norm.weight"] = b.k_norm
        for n in ["gate_proj", "up_proj", "down_proj"]:
            sd[p + f"mlp.{n}.weight"] = getattr(b, n).weight
        sd[p + "post_attention_layernorm.weight"] = b.attn_norm
        sd[p + "post_feedforward_layernorm.weight"] = b.ffn_norm
    missing, unexpected = hf.load_state_dict({k: v.detach() for k, v in sd.items()}, strict=False)
    assert not unexpected and not [m for m in missing if "rotary" not in m], (missing, unexpected)
    tokens = torch.randint(0, 300, (2, 24))
    with torch.no_grad():
        ref = hf(tokens).logits
        got = ours.lm_head(ours.hidden(tokens))
    err = ((got - ref).norm() / ref.norm()).item()
    assert err < 1e-5, f"torch_step model differs from HF Olmo3ForCausalLM: rel L2 {err:.3g}"
    return err


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", default="olmo3-190m")
    ap.add_argument("--info-json", help="output of `olmo info --json` (instead of running it)")
    ap.add_argument("--olmo-bin")
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--compile", action="store_true", help="torch.compile the model")
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                    help="bf16: torch.autocast('cpu', dtype=torch.bfloat16) around the forward")
    ap.add_argument("--mkldnn", choices=["on", "off"], default="on",
                    help="torch.backends.mkldnn.enabled")
    ap.add_argument("--optimizer", action="store_true", help="also time a fused AdamW step")
    ap.add_argument("--check-hf", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.backends.mkldnn.enabled = args.mkldnn == "on"
    info = {}
    if args.check_hf:
        info["hf_check_rel_l2"] = check_against_hf()
    c = load_config(args)
    torch.manual_seed(args.seed)
    model = Olmo3(c)
    init_(model)
    B, T = args.batch, args.seq
    tokens = torch.randint(0, min(c["vocab_size"], 100278), (B, T))
    targets = torch.full((B, T), -100, dtype=torch.long)
    targets[:, :-1] = tokens[:, 1:]
    step_fn = model
    if args.compile:
        step_fn = torch.compile(model)
    opt = None
    if args.optimizer:
        emb = [model.embed.weight]
        rest = [p for n, p in model.named_parameters() if n != "embed.weight"]
        opt = torch.optim.AdamW([{"params": emb, "weight_decay": 0.0},
                                 {"params": rest, "weight_decay": 0.1}],
                                lr=3e-4, betas=(0.9, 0.95), eps=1e-8, fused=True)

    bf16 = args.precision == "bf16"

    def fwd_bwd():
        model.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = step_fn(tokens, targets)
        loss.backward()
        return loss.item()

    t_compile = time.perf_counter()
    for _ in range(args.warmup):
        loss = fwd_bwd()
        if opt:
            opt.step()
    t_compile = time.perf_counter() - t_compile
    t_fb, t_opt = [], []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        loss = fwd_bwd()
        t1 = time.perf_counter()
        t_fb.append(t1 - t0)
        if opt:
            opt.step()
            t_opt.append(time.perf_counter() - t1)
    N = B * T
    fb = sum(t_fb) / len(t_fb)
    out = dict(impl="torch", torch=torch.__version__, preset=args.preset, seq=T, batch=B,
               threads=torch.get_num_threads(), compile=args.compile, precision=args.precision,
               mkldnn=args.mkldnn, steps=args.steps,
               warmup=args.warmup, warmup_seconds=t_compile, fwd_bwd_seconds=t_fb,
               fwd_bwd_seconds_mean=fb, tokens_per_second=N / fb, loss=loss,
               malloc="tcmalloc" if "tcmalloc" in os.environ.get("LD_PRELOAD", "") else "glibc",
               **info)
    if opt:
        o = sum(t_opt) / len(t_opt)
        out.update(optimizer="AdamW(fused=True)", optimizer_seconds=t_opt,
                   optimizer_seconds_mean=o, full_step_tokens_per_second=N / (fb + o))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
