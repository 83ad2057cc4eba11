"""Shared pieces of the OLMo-core reference tools (scripts/olmo_core_run.py, olmo_core_ckpt.py):
our YAML config resolved by `olmo train CONFIG ... --dry-run` (so overrides and `base:` chains
resolve exactly as olmo.cpp does), the check that every field is expressible in OLMo-core
(refusals name the field), the OLMo-core model built from it, and the OLMo-core <-> Hugging Face
tensor names (the names of `olmo export` / src/model/params.h).

Everything here runs in the project venv (torch, ai2-olmo-core 3.0.0, safetensors, PyYAML).
"""
import os
import subprocess
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


class RefError(Exception):
    """A bad input (config, run dir, checkpoint): printed as `error: ...`, exit 1."""


def olmo_bin():
    for p in (os.environ.get("OLMO_BIN", ""), os.path.join(ROOT, "build", "olmo")):
        if p and os.path.exists(p):
            return p
    raise RefError("build/olmo not found (set OLMO_BIN): it resolves the YAML config")


def resolve_config(config, overrides):
    """The resolved olmo.cpp config (dict) and its YAML text, from `olmo train --dry-run`."""
    p = subprocess.run([olmo_bin(), "train", config, *overrides, "--dry-run"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RefError(f"{config}: {p.stderr.strip() or p.stdout.strip()}")
    lines = p.stdout.splitlines()
    body = []
    for line in lines[1:]:  # line 0: "# resolved config (...)"
        if line.startswith("# model"):
            break
        body.append(line)
    text = "\n".join(body).strip() + "\n"
    return yaml.safe_load(text), text


# Fields the OLMo-core reference cannot express unless they hold this value (key -> (allowed
# values, why)). Everything not listed here and not used by build_* below has no effect on the
# trajectory (logging, audits, resource checks) and is accepted.
REFUSED_UNLESS = {
    "model.preset": ([""], "presets are not expanded here: give d_model .. norm_eps explicitly"),
    "model.yarn_factor": ([0, 0.0], "YaRN is not wired into the reference"),
    "model.precision": (["fp32"], "the reference runs fp32 (set model.precision=fp32)"),
    "data.dataset": (["fsl"], "only NumpyFSLDataset (packed + doc masking needs flash attention)"),
    "data.generate_doc_lengths": ([False], "intra-document masking is not supported by the torch "
                                           "attention backend"),
    "data.processes": ([0, 1], "the reference is one process"),
    "data.inject_fault": (["none"], "fault injection is olmo.cpp's"),
    "optim.name": (["skip_step_adamw"], "only SkipStepAdamW is mapped"),
    "optim.skip_step": ([True], "OLMo-core's SkipStepAdamW always applies the skip rule"),
    "trainer.hard_stop_epochs": ([0], "no epoch hard stop in the reference"),
    "benchmarks.suites": ([{}, None], "benchmark suites are olmo.cpp's (set benchmarks.suites={})"),
    "benchmarks.canaries": ([""], "canary exposure is olmo.cpp's"),
    "benchmarks.tasks": ([[], None], "OLMo in-loop tasks are not wired into the reference "
                                     "(set benchmarks.tasks=[])"),
}
SCHEDULERS = ("cos_with_warmup", "half_cos_with_warmup", "linear_with_warmup", "constant",
              "constant_with_warmup", "wsd")


def get(cfg, key):
    sec, leaf = key.split(".", 1)
    return (cfg.get(sec) or {}).get(leaf)


def check_expressible(cfg):
    for key, (allowed, why) in REFUSED_UNLESS.items():
        v = get(cfg, key)
        if v not in allowed and not (v == {} and {} in allowed):
            raise RefError(f"config field '{key}' = {v!r} cannot be expressed in the OLMo-core "
                           f"reference: {why}")
    for k in ("d_model", "n_layers", "n_heads", "n_kv_heads", "ffn_hidden", "vocab_size",
              "rope_theta", "norm_eps"):
        if not get(cfg, "model." + k):
            raise RefError(f"config field 'model.{k}' is 0: the reference needs it explicitly")
    if get(cfg, "scheduler.name") not in SCHEDULERS:
        raise RefError(f"config field 'scheduler.name' = {get(cfg, 'scheduler.name')!r} has no "
                       f"OLMo-core scheduler here (known: {', '.join(SCHEDULERS)})")
    if get(cfg, "scheduler.decay_steps") and get(cfg, "scheduler.name") != "wsd":
        raise RefError("config field 'scheduler.decay_steps' is only expressed for wsd")


def build_model_config(cfg):
    from olmo_core.nn.attention import SlidingWindowAttentionConfig
    from olmo_core.nn.feed_forward import FeedForwardConfig
    from olmo_core.nn.transformer import TransformerBlockType, TransformerConfig
    m = cfg["model"]
    pattern = [int(w) for w in (m.get("window_pattern") or [])]
    sw = None
    if pattern and any(w > 0 for w in pattern):
        sw = SlidingWindowAttentionConfig(
            pattern=pattern,
            force_full_attention_on_first_layer=m.get("force_full_first", -1) == 1,
            force_full_attention_on_last_layer=m.get("force_full_last", -1) != 0)
    return TransformerConfig.llama_like(
        d_model=int(m["d_model"]), vocab_size=int(m["vocab_size"]), n_layers=int(m["n_layers"]),
        n_heads=int(m["n_heads"]), n_kv_heads=int(m["n_kv_heads"]),
        block_name=TransformerBlockType.reordered_norm, qk_norm=True, use_head_qk_norm=False,
        layer_norm_eps=float(m["norm_eps"]), rope_theta=int(m["rope_theta"]),
        attn_backend="torch", sliding_window=sw,
        feed_forward=FeedForwardConfig(hidden_size=int(m["ffn_hidden"]), bias=False))


# OLMo-core block parameter -> HF (transformers Olmo3) name inside model.layers.<i>.
_BLOCK = {"attention.w_q": "self_attn.q_proj", "attention.w_k": "self_attn.k_proj",
          "attention.w_v": "self_attn.v_proj", "attention.w_out": "self_attn.o_proj",
          "attention.q_norm": "self_attn.q_norm", "attention.k_norm": "self_attn.k_norm",
          "attention_norm": "post_attention_layernorm", "feed_forward.w1": "mlp.gate_proj",
          "feed_forward.w2": "mlp.down_proj", "feed_forward.w3": "mlp.up_proj",
          "feed_forward_norm": "post_feedforward_layernorm"}
_TOP = {"embeddings.weight": "model.embed_tokens.weight",
        "lm_head.norm.weight": "model.norm.weight", "lm_head.w_out.weight": "lm_head.weight"}


def oc_to_hf_name(fqn):
    if fqn in _TOP:
        return _TOP[fqn]
    parts = fqn.split(".", 2)
    if parts[0] != "blocks" or len(parts) != 3 or not parts[2].endswith(".weight"):
        raise RefError(f"unexpected OLMo-core parameter '{fqn}' (not an OLMo 3 dense model)")
    inner = parts[2][: -len(".weight")]
    if inner not in _BLOCK:
        raise RefError(f"unexpected OLMo-core parameter '{fqn}' (not an OLMo 3 dense model)")
    return f"model.layers.{parts[1]}.{_BLOCK[inner]}.weight"


def hf_to_oc_name(hf):
    for k, v in _TOP.items():
        if v == hf:
            return k
    rev = {v: k for k, v in _BLOCK.items()}
    parts = hf.split(".", 3)
    if len(parts) == 4 and parts[0] == "model" and parts[1] == "layers":
        inner = parts[3][: -len(".weight")]
        if inner in rev:
            return f"blocks.{parts[2]}.{rev[inner]}.weight"
    raise RefError(f"unexpected HF tensor '{hf}' (not an OLMo 3 dense model)")


def write_hf_dir(model, out_dir, max_seq_len):
    """model (OLMo-core Transformer) -> out_dir/{config.json, model.safetensors} (fp32, HF names);
    max_position_embeddings = max_seq_len (OLMo-core's exporter leaves -1 without one)."""
    import json

    from olmo_core.nn.hf.config import get_hf_config
    from safetensors.torch import save_file
    os.makedirs(out_dir, exist_ok=True)
    sd = {oc_to_hf_name(k): v.detach().float().contiguous().clone()
          for k, v in model.state_dict().items()}
    save_file(sd, os.path.join(out_dir, "model.safetensors"), metadata={"format": "pt"})
    hf = get_hf_config(model).to_dict()
    for k in ("pad_token_id", "eos_token_id", "bos_token_id"):
        hf[k] = None
    hf["max_position_embeddings"] = int(max_seq_len)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(hf, f, indent=1)


def load_hf_into(model, hf_dir):
    """Copies hf_dir/model.safetensors into model's parameters (every tensor, shapes checked)."""
    import torch
    from safetensors.torch import load_file
    path = os.path.join(hf_dir, "model.safetensors")
    if not os.path.exists(path):
        raise RefError(f"{hf_dir}: no model.safetensors")
    sd = load_file(path)
    params = dict(model.named_parameters())
    seen = set()
    with torch.no_grad():
        for hf, t in sd.items():
            fqn = hf_to_oc_name(hf)
            if fqn not in params:
                raise RefError(f"{path}: tensor '{hf}' has no parameter in this model")
            if tuple(params[fqn].shape) != tuple(t.shape):
                raise RefError(f"{path}: '{hf}' has shape {tuple(t.shape)}, the model "
                               f"{tuple(params[fqn].shape)}")
            params[fqn].copy_(t.float())
            seen.add(fqn)
    missing = sorted(set(params) - seen)
    if missing:
        raise RefError(f"{path}: missing tensors for {', '.join(missing[:4])}")


def token_paths(path):
    """As eval::expand_token_paths: a .npy file, a directory (its *.npy sorted) or a .mix file."""
    if not os.path.exists(path):
        raise RefError(f"token data not found: {path}")
    if os.path.isdir(path):
        out = sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(".npy"))
        if not out:
            raise RefError(f"{path}: directory holds no .npy token files")
        return out
    if path.endswith(".mix"):
        return mix_paths(path)
    return [path]


def mix_paths(mix):
    """As data::load_mix: `label,path` lines relative to the mix file's directory."""
    out = []
    base = os.path.dirname(os.path.abspath(mix))
    with open(mix) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if "," not in line:
                raise RefError(f"{mix}:{n}: expected 'label,path'")
            p = line.split(",", 1)[1].strip().replace("{TOKENIZER}", "allenai/dolma3-tokenizer")
            p = p if os.path.isabs(p) else os.path.join(base, p)
            if not os.path.exists(p):
                raise RefError(f"{mix}:{n}: token file not found: {p}")
            out.append(p)
    return out


def use_float64_clip_norm():
    """--clip-f64 (the clip_twin of scripts/noise_floor.py): OLMo-core's
    TransformerTrainModule._clip_grad_norm gets its norm from torch.nn.utils.get_total_norm (fp32
    per-tensor norms, then a norm of the norms); this replaces it, for the whole process, by the
    float64 sum of squares of every gradient element, its square root rounded to fp32 (as
    olmo.cpp's optim/grad_clip.cpp). Only the 2-norm. Cost: one float64 pass over the gradient."""
    import math

    import torch

    def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
        if float(norm_type) != 2.0:
            raise RefError(f"--clip-f64: only the 2-norm, not {norm_type}")
        if isinstance(tensors, torch.Tensor):
            tensors = [tensors]
        s = sum(float(t.detach().double().pow(2).sum()) for t in tensors)
        return torch.tensor(math.sqrt(s), dtype=torch.float32)

    torch.nn.utils.get_total_norm = get_total_norm


def die(e):
    print(f"error: {e}", file=sys.stderr)
    sys.exit(1)
