"""Checkpoints across the two frameworks (issue 19), read with OLMo-core's own helpers
(olmo_core.distributed.checkpoint.load_keys / get_checkpoint_metadata, torch.load of
train/rank0.pt). olmo.cpp hands its state over as an interchange dir (src/train/
olmo_core_migrate.h: model.safetensors, optim.safetensors, interchange.json); `boundary` alone reads
olmo.cpp checkpoints directly (src/ckpt/checkpoint.h's documented format), as an independent
reader for the stage-boundary comparison. Everything is brought to one form, keyed by HF names:
  weights / exp_avg / exp_avg_sq   {hf_name: float32 array}
  steps                            {hf_name: AdamW step count}
  trainer                          global_step, tokens_seen, data loader state

usage:
  olmo_core_ckpt.py boundary OURS_STEP REF_STEP TWIN_STEP [TWIN_STEP ...] [--multiple K]
      Stage boundary check: ||ours - ref|| per family (weights, exp_avg, exp_avg_sq, over all
      tensors) within K x floor + 1e-6 x ||ref||, floor = the largest ||twin - ref|| of the
      reference's twins at the same step (REF/noise_twin, REF/clip_twin: scripts/noise_floor.py;
      the table names the twin); step counts, tokens seen and loader position exactly equal.
      Prints a table; exit 0 in tolerance, 2 otherwise (naming the family, both norms, bound).
  olmo_core_ckpt.py to-safetensors OC_STEP OUT_DIR
      An OLMo-core checkpoint as OUT_DIR/{model.safetensors, optim.safetensors
      (exp_avg/<hf>, exp_avg_sq/<hf>), interchange.json} for `olmo ckpt import-olmo-core`.
  olmo_core_ckpt.py from-interchange DIR DST CONFIG.yaml
      olmo.cpp's interchange dir DIR saved as DST/stepN by OLMo-core's own Trainer (built for
      the resolved config CONFIG.yaml) for `olmo ckpt export-olmo-core` / `hf-to-olmo-core`;
      OLMo-core resumes DST (without a trainer state in DIR: a fresh start, DST/step0).
Errors (exit 1) name the checkpoint and the problem: not a checkpoint, another architecture
(a parameter without an OLMo 3 name), missing moments.
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from olmo_core_common import RefError, die, oc_to_hf_name  # noqa: E402

_DT = {"f32": np.float32, "f64": np.float64, "i64": np.int64, "i32": np.int32, "u64": np.uint64,
       "u32": np.uint32, "u8": np.uint8}


def read_olmo_core(step_dir):
    """An OLMo-core checkpoint dir (stepN: model_and_optim/ + train/rank0.pt)."""
    import torch
    from olmo_core.distributed.checkpoint import get_checkpoint_metadata, load_keys
    mo = os.path.join(step_dir, "model_and_optim")
    if not os.path.isdir(mo):
        raise RefError(f"{step_dir}: not an OLMo-core checkpoint (no model_and_optim/)")
    keys = list(get_checkpoint_metadata(mo).state_dict_metadata.keys())
    want = [k for k in keys if k.startswith("model.") or
            (k.startswith("optim.state.") and k.rsplit(".", 1)[-1] in ("exp_avg", "exp_avg_sq", "step"))]
    vals = dict(zip(want, load_keys(mo, want)))
    out = {"weights": {}, "exp_avg": {}, "exp_avg_sq": {}, "steps": {}}
    for k, v in vals.items():
        if k.startswith("model."):
            out["weights"][oc_to_hf_name(k[len("model."):])] = v.float().numpy()
        else:
            fqn, field = k[len("optim.state."):].rsplit(".", 1)
            hf = oc_to_hf_name(fqn)
            if field == "step":
                out["steps"][hf] = float(v)
            else:
                out[field][hf] = v.float().numpy()
    for fam in ("exp_avg", "exp_avg_sq"):
        missing = sorted(set(out["weights"]) - set(out[fam]))
        if missing:
            raise RefError(f"{step_dir}: no {fam} for {missing[0]} (saved without optimizer state?)")
    groups = {}
    for k in keys:
        if k.startswith("optim.param_groups."):
            fqn, field = k[len("optim.param_groups."):].rsplit(".", 1)
            groups.setdefault(oc_to_hf_name(fqn), {})[field] = k
    flat = [k for g in groups.values() for k in g.values()]
    gv = dict(zip(flat, load_keys(mo, flat)))
    out["groups"] = {hf: {f: gv[k] for f, k in g.items()} for hf, g in groups.items()}
    st = torch.load(os.path.join(step_dir, "train", "rank0.pt"), weights_only=False)
    out["trainer"] = {"global_step": int(st["global_step"]),
                      "tokens_seen": int(st["global_train_tokens_seen"]),
                      "loader": dict(st["data_loader"]), "epoch": int(st.get("epoch", 1))}
    return out


def read_olmo_cpp(step_dir):
    """An olmo.cpp checkpoint dir (src/ckpt/checkpoint.h); sharded tensors are reassembled."""
    ip = os.path.join(step_dir, "index.json")
    if not os.path.exists(ip) or not os.path.exists(os.path.join(step_dir, "COMMITTED")):
        raise RefError(f"{step_dir}: not a complete olmo.cpp checkpoint (index.json, COMMITTED)")
    index = json.load(open(ip))
    full = {}
    for e in index["tensors"]:
        arr = np.fromfile(os.path.join(step_dir, e["file"]), dtype=_DT[e["dtype"]],
                          count=int(np.prod(e["local_shape"])) if e["local_shape"] else 1,
                          offset=int(e["byte_offset"])).reshape(e["local_shape"])
        g = full.setdefault(e["name"], np.zeros(e["global_shape"], dtype=_DT[e["dtype"]]))
        sl = tuple(slice(o, o + n) for o, n in zip(e["offset"], e["local_shape"]))
        g[sl] = arr
    state = json.load(open(os.path.join(step_dir, "state.json")))
    out = {"weights": {}, "exp_avg": {}, "exp_avg_sq": {}, "steps": {}}
    for name, a in full.items():
        if name.startswith("optim.exp_avg/"):
            out["exp_avg"][name.split("/", 1)[1]] = a
        elif name.startswith("optim.exp_avg_sq/"):
            out["exp_avg_sq"][name.split("/", 1)[1]] = a
        elif name.startswith("model.") or name == "lm_head.weight":
            out["weights"][name] = a
    opt = state.get("optim", {})
    # Step counts per group (embeddings, default) -> per tensor.
    gsteps = {g["name"]: s for g, s in zip(opt.get("groups", []), opt.get("steps", []))}
    for hf in out["weights"]:
        out["steps"][hf] = float(gsteps.get("embeddings" if hf == "model.embed_tokens.weight"
                                            else "default", float("nan")))
    tr = state.get("trainer", {})
    out["trainer"] = {"global_step": int(tr.get("step", -1)),
                      "tokens_seen": int(tr.get("tokens_seen", -1)),
                      "loader": dict(state.get("loader", {}))}
    out["state"] = state
    return out


def _norm_diff(a, b):
    return float(np.sqrt(sum(float(((a[k].astype(np.float64) - b[k].astype(np.float64)) ** 2).sum())
                             for k in b)))


def _norm(a):
    return float(np.sqrt(sum(float((v.astype(np.float64) ** 2).sum()) for v in a.values())))


def _twin_name(step_dir):
    """REF/noise_twin/step100 -> noise_twin."""
    return os.path.basename(os.path.dirname(os.path.abspath(step_dir))) or step_dir


def boundary(ours_dir, ref_dir, twin_dirs, multiple):
    ours, ref = read_olmo_cpp(ours_dir), read_olmo_core(ref_dir)
    twins = [(_twin_name(t), read_olmo_core(t)) for t in twin_dirs]
    bad = []
    if set(ours["weights"]) != set(ref["weights"]):
        raise RefError(f"{ours_dir} and {ref_dir}: different tensors "
                       f"({sorted(set(ours['weights']) ^ set(ref['weights']))[:3]})")
    print(f"{'family':12s} {'||ours-ref||':>14s} {'||twin-ref||':>14s} {'ratio':>8s} {'bound':>12s}"
          "  per twin ||twin-ref||")
    for fam in ("weights", "exp_avg", "exp_avg_sq"):
        d = _norm_diff(ours[fam], ref[fam])
        per = [(n, _norm_diff(t[fam], ref[fam])) for n, t in twins]
        f = max(v for _, v in per)
        bound = multiple * f + 1e-6 * _norm(ref[fam])
        print(f"{fam:12s} {d:14.6g} {f:14.6g} {d / f if f else float('inf'):8.3g} {bound:12.6g}  "
              + ", ".join(f"{n} {v:.6g}" for n, v in per))
        if not d <= bound:
            bad.append(f"{fam}: ||ours - ref|| {d:.6g} > bound {bound:.6g} ({multiple} x noise "
                       f"floor {f:.6g})")
    for hf, s in ref["steps"].items():
        if ours["steps"].get(hf) != s:
            bad.append(f"AdamW step count of {hf}: ours {ours['steps'].get(hf)}, reference {s}")
            break
    for k in ("global_step", "tokens_seen"):
        if ours["trainer"][k] != ref["trainer"][k]:
            bad.append(f"{k}: ours {ours['trainer'][k]}, reference {ref['trainer'][k]}")
    for k in ("batches_processed", "tokens_processed", "seed", "epoch", "dataset_fingerprint"):
        if ours["trainer"]["loader"].get(k) != ref["trainer"]["loader"].get(k):
            bad.append(f"loader {k}: ours {ours['trainer']['loader'].get(k)}, reference "
                       f"{ref['trainer']['loader'].get(k)}")
    print(f"step counts {sorted(set(ref['steps'].values()))}, global step "
          f"{ref['trainer']['global_step']}, loader {ref['trainer']['loader'].get('batches_processed')} "
          "batches: " + ("equal" if not any("step" in b or "loader" in b for b in bad) else "DIFFER"))
    for b in bad:
        print("OUT OF TOLERANCE " + b)
    print("IN TOLERANCE" if not bad else "DIVERGED")
    return 0 if not bad else 2


def to_safetensors(step_dir, out_dir):
    import torch
    from safetensors.torch import save_file
    c = read_olmo_core(step_dir)
    os.makedirs(out_dir, exist_ok=True)
    save_file({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in c["weights"].items()},
              os.path.join(out_dir, "model.safetensors"), metadata={"format": "pt"})
    opt = {f"{fam}/{k}": torch.from_numpy(np.ascontiguousarray(v))
           for fam in ("exp_avg", "exp_avg_sq") for k, v in c[fam].items()}
    save_file(opt, os.path.join(out_dir, "optim.safetensors"))
    emb = "model.embed_tokens.weight"
    other = next(k for k in c["groups"] if k != emb)
    g = lambda hf: {k: (list(v) if isinstance(v, (tuple, list)) else float(v))  # noqa: E731
                    for k, v in c["groups"][hf].items()}
    state = {"trainer": c["trainer"], "steps": {"embeddings": c["steps"][emb],
                                                "default": c["steps"][other]},
             "groups": {"embeddings": g(emb), "default": g(other)}}
    if len({v for k, v in c["steps"].items() if k != emb}) != 1:
        raise RefError(f"{step_dir}: AdamW step counts differ between tensors of one group")
    with open(os.path.join(out_dir, "interchange.json"), "w") as f:
        json.dump(state, f, indent=1, default=str)


def read_interchange(d):
    """olmo.cpp's interchange dir (src/interop/olmo_core_migrate.h) in read_olmo_core's form."""
    from safetensors.numpy import load_file
    for f in ("model.safetensors", "optim.safetensors", "interchange.json"):
        if not os.path.exists(os.path.join(d, f)):
            raise RefError(f"{d}: not an olmo.cpp interchange dir (no {f})")
    st = json.load(open(os.path.join(d, "interchange.json")))
    opt = load_file(os.path.join(d, "optim.safetensors"))
    out = {"weights": load_file(os.path.join(d, "model.safetensors")),
           "exp_avg": {k.split("/", 1)[1]: v for k, v in opt.items() if k.startswith("exp_avg/")},
           "exp_avg_sq": {k.split("/", 1)[1]: v for k, v in opt.items()
                          if k.startswith("exp_avg_sq/")},
           "steps": {k: float(v) for k, v in st["tensor_steps"].items()},
           "groups": st["groups"], "trainer": st.get("trainer")}
    return out


def from_interchange(src, dst, config_yaml):
    """olmo.cpp's interchange dir -> dst/stepN, saved by OLMo-core's own
    Trainer.save_checkpoint() from a train module and Trainer built for config_yaml
    (olmo_core_run.build): weights, both moments and step counts per parameter, betas / eps /
    weight decay per group, and (when the interchange has one) the global step, tokens seen and
    the data-loader state; else OLMo-core's fresh trainer state. OLMo-core's Trainer then resumes
    dst."""
    import torch
    import yaml

    import olmo_core_run
    from olmo_core_common import check_expressible, hf_to_oc_name
    cfg = yaml.safe_load(open(config_yaml))
    check_expressible(cfg)
    ours = read_interchange(src)
    trainer, tm = olmo_core_run.build(cfg, os.path.abspath(dst), 1, {})
    params = dict(tm.model.named_parameters())
    if set(hf_to_oc_name(k) for k in ours["weights"]) != set(params):
        raise RefError(f"{src}: its tensors do not match the config's model")
    with torch.no_grad():
        for hf, w in ours["weights"].items():
            p = params[hf_to_oc_name(hf)]
            if tuple(p.shape) != tuple(w.shape):
                raise RefError(f"{src}: {hf} has shape {w.shape}, the model {tuple(p.shape)}")
            p.copy_(torch.from_numpy(w))
            tm.optim.state[p] = {"step": torch.tensor(ours["steps"][hf], dtype=torch.float32),
                                 "exp_avg": torch.from_numpy(ours["exp_avg"][hf].copy()),
                                 "exp_avg_sq": torch.from_numpy(ours["exp_avg_sq"][hf].copy())}
    names = {id(p): n for n, p in params.items()}
    for g in tm.optim.param_groups:
        emb = any(names[id(p)] == "embeddings.weight" for p in g["params"])
        # (one group when the embedding's decay equals the others': olmo.cpp merges them)
        h = ours["groups"].get("embeddings" if emb else "default") or next(iter(ours["groups"].values()))
        g["betas"] = tuple(h["betas"])
        g["eps"] = h["eps"]
        g["weight_decay"] = h["weight_decay"]
    tr = ours["trainer"]
    if tr is not None:
        loader = dict(tr["loader"])
        trainer.load_state_dict({"global_step": tr["global_step"],
                                 "global_train_tokens_seen": tr["tokens_seen"],
                                 "data_loader": loader, "epoch": int(loader.get("epoch", 1)),
                                 "world_size": -1})  # no RNG state to restore (no dropout)
    path = trainer.save_checkpoint()
    print(f"from-interchange: {src} -> {path} (step {trainer.global_step})")


def main():
    import logging

    import torch
    torch.set_num_threads(1)  # no heavy compute here
    logging.disable(logging.WARNING)
    a = sys.argv[1:]
    if len(a) >= 4 and a[0] == "boundary":
        k = float(a[a.index("--multiple") + 1]) if "--multiple" in a else 20.0
        if "--multiple" in a:
            del a[a.index("--multiple"):a.index("--multiple") + 2]
        sys.exit(boundary(a[1], a[2], a[3:], k))
    if len(a) == 4 and a[0] == "from-interchange":
        from_interchange(a[1], a[2], a[3])
        return
    if len(a) == 3 and a[0] == "to-safetensors":
        to_safetensors(a[1], a[2])
        return
    print(__doc__, file=sys.stderr)
    sys.exit(1)


if __name__ == "__main__":
    try:
        main()
    except RefError as e:
        die(e)
