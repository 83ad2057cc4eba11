"""References for tests/model/yarn_test.cpp: one small OLMo 3 with YaRN (old context 64, sequence
256, window 32 on layers 0-2, full attention on layer 3, GQA), fp32, random weights, a fixed
batch; for each case it writes DIR/<case>/{config.json, model.safetensors (HF names),
tokens.i32 [B,T], logits.f32 [B,T,V], grads.safetensors (d mean next-token loss / d param,
HF names), loss.txt}:
  olmo_core  OLMo-core's own Transformer (PyPI ai2-olmo-core) built with
             TransformerConfig.with_rope_scaling(YaRNRoPEScalingConfig(8, 32, 1, 64),
             full_attn_layers_only=True), torch SDPA backend; config.json from OLMo-core's HF
             exporter (olmo_core.nn.hf.config.get_hf_config: rope_parameters per layer type).
  hf_legacy  transformers' Olmo3ForCausalLM (eager), same weights, with the released config's
             legacy rope_scaling field (YaRNRoPEScalingConfig.to_hf_config); transformers 5.24
             applies it to full-attention layers only.
  hf_all     Olmo3ForCausalLM with rope_parameters giving the same YaRN to both layer types:
             scaling on every layer (what earlier transformers 5.x ran for the release).
Usage: yarn_ref.py DIR
"""
import json
import os
import sys

import torch
from safetensors.torch import save_file

torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
OUT = sys.argv[1]
V, D, L, H, KV, HD, W, B, T, OLD = 97, 64, 4, 4, 2, 16, 32, 2, 256, 64
THETA = 500000


def oc_to_hf_names(sd):
    out = {"model.embed_tokens.weight": sd["embeddings.weight"],
           "model.norm.weight": sd["lm_head.norm.weight"],
           "lm_head.weight": sd["lm_head.w_out.weight"]}
    m = {"attention.w_q": "self_attn.q_proj", "attention.w_k": "self_attn.k_proj",
         "attention.w_v": "self_attn.v_proj", "attention.w_out": "self_attn.o_proj",
         "attention.q_norm": "self_attn.q_norm", "attention.k_norm": "self_attn.k_norm",
         "attention_norm": "post_attention_layernorm", "feed_forward.w1": "mlp.gate_proj",
         "feed_forward.w2": "mlp.down_proj", "feed_forward.w3": "mlp.up_proj",
         "feed_forward_norm": "post_feedforward_layernorm"}
    for k, v in sd.items():
        if not k.startswith("blocks."):
            continue
        _, i, rest = k.split(".", 2)
        name = rest[: -len(".weight")]
        out[f"model.layers.{i}.{m[name]}.weight"] = v
    assert len(out) == len(sd), (len(out), len(sd))
    return {k: v.detach().contiguous().clone() for k, v in out.items()}


def randomise(params, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in params:
            if p.dim() == 1:
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.15 * torch.randn(p.shape, generator=g))


def loss_of(logits, ids):
    return torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1))


def write_case(name, config, weights, ids, logits, loss, grads):
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    save_file(weights, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    ids.to(torch.int32).numpy().tofile(os.path.join(d, "tokens.i32"))
    logits.detach().float().numpy().tofile(os.path.join(d, "logits.f32"))
    save_file({k: v.contiguous() for k, v in grads.items()},
              os.path.join(d, "grads.safetensors"))
    with open(os.path.join(d, "loss.txt"), "w") as f:
        f.write(f"{loss:.10g}\n")


def main():
    from olmo_core.nn.attention import SlidingWindowAttentionConfig
    from olmo_core.nn.hf.config import get_hf_config
    from olmo_core.nn.rope import YaRNRoPEScalingConfig
    from olmo_core.nn.transformer import TransformerBlockType, TransformerConfig
    from transformers import Olmo3Config, Olmo3ForCausalLM

    ids = torch.randint(0, V, (B, T), generator=torch.Generator().manual_seed(7))

    # OLMo-core, the faithful variant.
    cfg = TransformerConfig.llama_like(
        d_model=D, vocab_size=V, n_layers=L, n_heads=H, n_kv_heads=KV, hidden_size_multiplier=1.0,
        block_name=TransformerBlockType.reordered_norm, qk_norm=True, rope_theta=THETA,
        layer_norm_eps=1e-6, attn_backend="torch",
        sliding_window=SlidingWindowAttentionConfig(
            pattern=[W, W, W, -1], force_full_attention_on_first_layer=False,
            force_full_attention_on_last_layer=True))
    cfg = cfg.with_rope_scaling(
        YaRNRoPEScalingConfig(factor=8, beta_fast=32, beta_slow=1, old_context_len=OLD),
        full_attn_layers_only=True)
    oc = cfg.build(init_device="cpu").float()
    scaled = [b.attention.rope.scaling is not None for b in oc.blocks.values()]
    assert scaled == [False, False, False, True], scaled
    randomise(oc.parameters(), 11)
    weights = oc_to_hf_names(oc.state_dict())
    logits = oc(ids)
    loss = loss_of(logits, ids)
    loss.backward()
    oc_grads = oc_to_hf_names({k: p.grad for k, p in oc.named_parameters()})
    logits = logits.detach()
    hf_cfg = get_hf_config(oc).to_dict()
    hf_cfg["max_position_embeddings"] = T
    hf_cfg["pad_token_id"] = None
    hf_cfg["eos_token_id"] = None
    hf_cfg["bos_token_id"] = None
    write_case("olmo_core", hf_cfg, weights, ids, logits, float(loss), oc_grads)
    print("olmo_core: rope fields in its HF config:",
          {k: hf_cfg.get(k) for k in ("rope_scaling", "rope_parameters", "rope_theta")})

    def hf_case(name, config_dict):
        c = Olmo3Config(**{k: v for k, v in config_dict.items()
                           if k not in ("architectures", "transformers_version", "model_type",
                                        "dtype", "torch_dtype")})
        c._attn_implementation = "eager"
        m = Olmo3ForCausalLM(c).float()
        m.load_state_dict(weights)
        out = m(input_ids=ids)
        lo = loss_of(out.logits, ids)
        lo.backward()
        g = {n: p.grad for n, p in m.named_parameters()}
        print(f"{name}: rope_parameters {m.config.rope_parameters}")
        write_case(name, config_dict, weights, ids, out.logits, float(lo), g)
        return m

    # The released long-context config form (spec 2.4): a legacy rope_scaling field, as
    # OLMo-core's YaRNRoPEScalingConfig.to_hf_config writes it.
    legacy = {k: v for k, v in hf_cfg.items() if k != "rope_parameters"}
    legacy["rope_scaling"] = YaRNRoPEScalingConfig(
        factor=8, beta_fast=32, beta_slow=1, old_context_len=OLD).to_hf_config()
    legacy["rope_theta"] = float(THETA)
    m = hf_case("hf_legacy", legacy)
    assert m.config.rope_parameters["sliding_attention"]["rope_type"] == "default"
    y = dict(rope_type="yarn", rope_theta=float(THETA), factor=8.0,
             original_max_position_embeddings=OLD, beta_fast=32.0, beta_slow=1.0,
             attention_factor=0.1 * __import__("math").log(8.0) + 1.0)
    all_cfg = {k: v for k, v in hf_cfg.items() if k not in ("rope_scaling", "rope_theta")}
    all_cfg["rope_parameters"] = {"full_attention": dict(y), "sliding_attention": dict(y)}
    m = hf_case("hf_all", all_cfg)
    assert m.config.rope_parameters["sliding_attention"]["rope_type"] == "yarn"


if __name__ == "__main__":
    main()
