"""Reference for tests/model/yarn_docmask_test.cpp: the stage-3 forward in PyTorch, i.e.
transformers' Olmo3ForCausalLM (eager attention, fp32) with YaRN on the full-attention layer
(legacy rope_scaling; transformers 5.24 applies it to full-attention layers only) and packed
instances with intra-document masking given as explicit 4-D additive masks per layer type:
query i sees key j iff j <= i, same document and (sliding layers) i - j < window. Positions are
not reset at document boundaries (0..T-1 per instance, as in the release). Labels: next token,
ignored after each instance's real tokens (padding) and at the last position (OLMo-core
get_labels); loss = sum CE / number of labels.
Writes DIR/{config.json, model.safetensors, tokens.i32 [B,T], doc_lens.json, label_len.json,
logits.f32 [B,T,V], grads.safetensors, loss.txt}. Usage: yarn_docmask_ref.py DIR
"""
import json
import math
import os
import sys

import torch
from safetensors.torch import save_file
from transformers import Olmo3Config, Olmo3ForCausalLM

torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
OUT = sys.argv[1]
V, D, L, H, KV, W, B, T, OLD = 97, 64, 4, 4, 2, 32, 2, 256, 64
EOS, PAD = 95, 96
# Per instance: document lengths (EOS-terminated) then padding (one more segment).
DOCS = [[100, 60, 41, 45], [256]]


def main():
    os.makedirs(OUT, exist_ok=True)
    yarn = dict(rope_type="yarn", factor=8.0, original_max_position_embeddings=OLD,
                beta_fast=32.0, beta_slow=1.0, attention_factor=0.1 * math.log(8.0) + 1.0)
    cfg = dict(model_type="olmo3", vocab_size=V, hidden_size=D, intermediate_size=96,
               num_hidden_layers=L, num_attention_heads=H, num_key_value_heads=KV,
               sliding_window=W, max_position_embeddings=T, rms_norm_eps=1e-6,
               rope_theta=500000.0, rope_scaling=yarn, pad_token_id=None, eos_token_id=None,
               bos_token_id=None)
    c = Olmo3Config(**{k: v for k, v in cfg.items() if k != "model_type"})
    c._attn_implementation = "eager"
    torch.manual_seed(3)
    m = Olmo3ForCausalLM(c).float()
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(1.0 + 0.2 * torch.randn_like(p) if p.dim() == 1 else 0.15 * torch.randn_like(p))
    assert m.config.rope_parameters["sliding_attention"]["rope_type"] == "default"

    g = torch.Generator().manual_seed(4)
    ids = torch.full((B, T), PAD, dtype=torch.long)
    doc = torch.zeros((B, T), dtype=torch.long)
    label_len, doc_lens = [], []
    for b, lens in enumerate(DOCS):
        t = 0
        for k, n in enumerate(lens):
            ids[b, t:t + n - 1] = torch.randint(0, EOS, (n - 1,), generator=g)
            ids[b, t + n - 1] = EOS if t + n < T or k + 1 < len(lens) else ids[b, t + n - 1]
            doc[b, t:t + n] = k
            t += n
        label_len.append(t)
        lens = list(lens)
        if t < T:
            doc[b, t:] = len(lens)
            lens.append(T - t)
        doc_lens.append(lens)
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    same = doc[:, :, None] == doc[:, None, :]
    full = same & (j <= i)
    slide = full & (i - j < W)
    neg = torch.finfo(torch.float32).min

    def additive(ok):
        return torch.where(ok, 0.0, neg).to(torch.float32)[:, None]

    masks = {"full_attention": additive(full), "sliding_attention": additive(slide)}
    out = m(input_ids=ids, attention_mask=masks)
    labels = torch.full((B, T), -100, dtype=torch.long)
    for b in range(B):
        n = label_len[b]
        labels[b, : n - 1] = ids[b, 1:n]
    ce = torch.nn.functional.cross_entropy(out.logits.reshape(-1, V), labels.reshape(-1),
                                           ignore_index=-100, reduction="sum")
    count = int((labels != -100).sum())
    loss = ce / count
    loss.backward()

    with open(os.path.join(OUT, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    save_file({n: p.detach().contiguous() for n, p in m.named_parameters()},
              os.path.join(OUT, "model.safetensors"), metadata={"format": "pt"})
    ids.to(torch.int32).numpy().tofile(os.path.join(OUT, "tokens.i32"))
    out.logits.detach().numpy().tofile(os.path.join(OUT, "logits.f32"))
    save_file({n: p.grad.contiguous() for n, p in m.named_parameters()},
              os.path.join(OUT, "grads.safetensors"))
    json.dump(doc_lens, open(os.path.join(OUT, "doc_lens.json"), "w"))
    json.dump(label_len, open(os.path.join(OUT, "label_len.json"), "w"))
    with open(os.path.join(OUT, "loss.txt"), "w") as f:
        f.write(f"{float(loss):.10g}\n")
    # Sensitivity: the same batch without document masking (causal + window only) changes the
    # loss, so the comparison can fail.
    with torch.no_grad():
        plain = m(input_ids=ids).logits
    with open(os.path.join(OUT, "nomask_logits_rel.txt"), "w") as f:
        f.write(f"{float((plain - out.logits).norm() / out.logits.norm()):.6g}\n")


if __name__ == "__main__":
    main()
