"""The OLMo-core side's recorder (scripts/olmo_core_run.py): an OLMo-core Trainer callback that
writes a reference run's metrics.jsonl and validation.jsonl in olmo.cpp's schemas
(src/monitor/callbacks.cpp MetricsLogger / Evaluator, src/monitor/validation.h), computed with the
OLMo-core model itself:
  held-out loss   OLMo-core's NumpyPaddedFSLDataset (one document per padded instance, as
                  src/data/eval_dataset.h), token-mean CE over every supervised position of the
                  first max_instances documents, batches of eval.batch_instances
  model_entropy   mean predictive entropy (nats, float64) over every position of the first
                  validation.entropy_instances documents of the first set (sorted by label),
                  each forwarded unpadded; marginal_entropy_bits of the mean distribution
  served / batch  unigram entropy (bits) of the tokens served in the window / of the fixed batch
grad_norm_f64: the float64 norm of OLMo-core's unclipped gradient (pre_optim_step), next to its
logged fp32 "optim/total grad norm" (grad_norm).
param_rms       every trainer.param_rms_interval steps: per parameter group (src/monitor/param_rms.h
                names, the same tensors pooled over layers, and each block tensor alone as
                GROUP.LAYER) the weight RMS after the step and
                the update RMS ||w_t - w_{t-1}|| / sqrt(n), float64 sums; w_{t-1} is copied in
                pre_step (one extra copy of the weights on recorded steps).
Train records merge OLMo-core's logged metrics ("train/CE loss", "train/Z loss", "optim/total grad
norm", "optim/LR (group 0)", "optim/step skipped") by step with the batch's "index" entries.
Cost per validation / eval point: one forward per batch of documents (no grad).
"""
import json
import os
import time

import numpy as np
import torch
import torch.nn.functional as F
from olmo_core.train.callbacks import Callback

from olmo_core_common import oc_to_hf_name, token_paths, write_hf_dir

# HF tensor name inside a block (model.layers.<i>.<suffix>) / top-level name -> param_rms group,
# as src/model/param_groups.cpp (the record's group order).
PARAM_GROUPS = {"model.embed_tokens.weight": "embed",
                "self_attn.q_proj.weight": "attn_q", "self_attn.k_proj.weight": "attn_k",
                "self_attn.v_proj.weight": "attn_v", "self_attn.o_proj.weight": "attn_o",
                "self_attn.q_norm.weight": "q_norm", "self_attn.k_norm.weight": "k_norm",
                "mlp.gate_proj.weight": "mlp_gate", "mlp.up_proj.weight": "mlp_up",
                "mlp.down_proj.weight": "mlp_down",
                "post_attention_layernorm.weight": "attn_norm",
                "post_feedforward_layernorm.weight": "mlp_norm",
                "model.norm.weight": "final_norm", "lm_head.weight": "lm_head"}


def param_group(fqn):
    """OLMo-core parameter name -> param_rms group."""
    hf = oc_to_hf_name(fqn)
    return PARAM_GROUPS.get(hf) or PARAM_GROUPS[hf.split(".", 3)[3]]


def unigram_bits(counts):
    n = counts.sum()
    if n == 0:
        return 0.0
    p = counts[counts > 0].astype(np.float64) / float(n)
    return float(-(p * np.log2(p)).sum())


def tokens_digest(ids):
    """sum_i (t_i + 1) * (2 i + 1) mod 2^64 over the flat batch (see olmo_core_run.py)."""
    a = np.asarray(ids, dtype=np.uint64).reshape(-1)
    i = np.arange(a.size, dtype=np.uint64)
    with np.errstate(over="ignore"):
        return str(int(((a + np.uint64(1)) * (np.uint64(2) * i + np.uint64(1))).sum(dtype=np.uint64)))


class HeldOut:
    """One held-out set: OLMo-core's padded eval dataset over the set's token files."""

    def __init__(self, label, path, cfg, max_instances, batch, work):
        from olmo_core.data.numpy_dataset import NumpyPaddedFSLDataset
        d = cfg["data"]
        self.label, self.batch = label, max(1, int(batch))
        self.ds = NumpyPaddedFSLDataset(
            *token_paths(path), sequence_length=int(d["seq_len"]), pad_token_id=int(d["pad_id"]),
            eos_token_id=int(d["eos_id"]), vocab_size=int(cfg["model"]["vocab_size"]),
            dtype=np.uint32)
        self.ds.work_dir = work
        self.ds.prepare()
        n = len(self.ds)
        self.n = min(int(max_instances), n) if int(max_instances) > 0 else n

    def docs(self, k):
        """The first k documents, unpadded (token id lists)."""
        out = []
        for i in range(min(k, len(self.ds))):
            it = self.ds[i]
            n = int(torch.as_tensor(it["label_mask"]).sum()) if "label_mask" in it else len(it["input_ids"])
            out.append(torch.as_tensor(it["input_ids"])[:n].long())
        return out

    @torch.no_grad()
    def loss(self, model):
        from olmo_core.data.utils import get_labels
        ce, count = 0.0, 0
        for first in range(0, self.n, self.batch):
            items = [self.ds[i] for i in range(first, min(self.n, first + self.batch))]
            b = {"input_ids": torch.stack([torch.as_tensor(x["input_ids"]).long() for x in items])}
            if "label_mask" in items[0]:
                b["label_mask"] = torch.stack([torch.as_tensor(x["label_mask"]) for x in items])
            labels = get_labels(b)
            logits = model(b["input_ids"]).float()
            V = logits.shape[-1]
            ce += float(F.cross_entropy(logits.reshape(-1, V), labels.reshape(-1),
                                        ignore_index=-100, reduction="sum").double())
            count += int((labels != -100).sum())
        return ce / count if count else float("nan"), count


@torch.no_grad()
def nudge_ulp(model, how):
    """Moves every weight by one ulp (torch.nextafter): how "up" (every element towards +inf: the
    noise_twin of scripts/noise_floor.py) or "mixed" (each element up or down by a coin of a
    torch.Generator seeded 1, drawn per tensor in named_parameters order: the held-out twin)."""
    gen = torch.Generator().manual_seed(1)
    for _, p in model.named_parameters():
        up = torch.ones_like(p, dtype=torch.bool) if how == "up" else \
            torch.rand(p.shape, generator=gen) < 0.5
        inf = torch.full_like(p, float("inf"))
        p.copy_(torch.nextafter(p, torch.where(up, inf, -inf)))


class Recorder(Callback):
    def __init__(self, cfg, run_dir, total_steps, nudge=None):
        super().__init__()
        self.nudge = nudge  # None, "up" or "mixed": nudge_ulp()
        self.on_init_hf = None  # called once DIR/init_hf is written (starts the noise twin)
        self.cfg, self.run_dir, self.total = cfg, run_dir, total_steps
        self.V = int(cfg["model"]["vocab_size"])
        work = os.path.join(run_dir, "work")
        ev, va = cfg["eval"], cfg["validation"]
        bi = int(ev["batch_instances"])
        self.eval_sets = [HeldOut(k, p, cfg, ev["max_instances"], bi, work)
                          for k, p in sorted((ev.get("sets") or {}).items())]
        vsets = va.get("sets") or ev.get("sets") or {}
        self.val_every = int(va["interval"]) if vsets else 0
        self.val_sets = [HeldOut(k, p, cfg, va["max_instances"], bi, work)
                         for k, p in sorted(vsets.items())] if self.val_every > 0 else []
        self.fixed = self.val_sets[0].docs(int(va["entropy_instances"])) if self.val_sets else []
        self.batch_bits = unigram_bits(np.bincount(torch.cat(self.fixed).numpy(), minlength=self.V)) \
            if self.fixed else 0.0
        self.steps, self.evals, self.vals, self.info = {}, [], [], []
        self.served = np.zeros(self.V, dtype=np.int64)
        self.window_first = None
        self.last_step = 0
        self._t0 = 0.0
        self.rms_every = int(cfg["trainer"].get("param_rms_interval") or 0)
        self.rms, self._before = [], None

    # Trainer hooks ------------------------------------------------------------------------
    def start(self, model, step):
        self.model, self.first_step = model, step
        self.window_first = step + 1

    def pre_train(self):
        """After OLMo-core loaded any checkpoint: the nudge, then DIR/init_hf (the start)."""
        if self.nudge:
            nudge_ulp(self.model, self.nudge)
        write_hf_dir(self.model, os.path.join(self.run_dir, "init_hf"),
                     int(self.cfg["data"]["seq_len"]))
        if self.on_init_hf:
            self.on_init_hf()
        s = self.trainer.global_step
        self.first_step = s
        self.window_first = s + 1
        self.info.append({"kind": "info", "event": "start", "step": s,
                          "framework": "olmo-core", "total_steps": self.total,
                          "params": sum(p.numel() for p in self.model.parameters()),
                          "seq_len": int(self.cfg["data"]["seq_len"]),
                          "global_batch_tokens": int(self.cfg["data"]["global_batch_tokens"])})
        if self.eval_sets and self.cfg["eval"]["at_start"] and s == 0:
            self.evaluate(0)

    def pre_step(self, batch):
        self._t0 = time.perf_counter()
        s = self.trainer.global_step
        ids = batch["input_ids"]
        rec = self.steps.setdefault(s, {})
        rec["instances"] = [int(i) for i in batch["index"].reshape(-1).tolist()]
        rec["tokens"] = int(ids.numel())
        rec["tokens_digest"] = tokens_digest(ids.numpy())
        self.served += np.bincount(ids.reshape(-1).numpy().astype(np.int64), minlength=self.V)
        if self.rms_every > 0 and s % self.rms_every == 0:
            with torch.no_grad():
                self._before = {n: p.detach().clone() for n, p in self.model.named_parameters()}

    @torch.no_grad()
    def param_rms(self, step):
        """The param_rms record of step (after its optimizer step) against self._before."""
        sums = {}
        for n, p in self.model.named_parameters():
            w = p.detach().double()
            acc = sums.setdefault(param_group(n), [0.0, 0.0, 0])
            acc[0] += float(w.pow(2).sum())
            acc[1] += float((w - self._before[n].double()).pow(2).sum())
            acc[2] += w.numel()
        layers = {}  # GROUP.LAYER -> [sum w^2, sum dw^2, n]: each block tensor alone
        for n, p in self.model.named_parameters():
            hf = oc_to_hf_name(n)
            if hf.startswith("model.layers."):
                w = p.detach().double()
                layers[f"{param_group(n)}.{hf.split('.')[2]}"] = [
                    float(w.pow(2).sum()), float((w - self._before[n].double()).pow(2).sum()),
                    w.numel()]
        order = list(dict.fromkeys(PARAM_GROUPS.values()))
        groups = [g for g in order if g in sums] + list(layers)
        sums.update(layers)
        self.rms.append({"kind": "param_rms", "step": step,
                         "weight": {g: (sums[g][0] / sums[g][2]) ** 0.5 for g in groups},
                         "update": {g: (sums[g][1] / sums[g][2]) ** 0.5 for g in groups}})
        self._before = None

    @torch.no_grad()
    def pre_optim_step(self):
        """The norm of OLMo-core's unclipped gradient in float64: its logged "optim/total grad
        norm" comes from torch's fp32 clip_grad_norm_, off by ~5e-6 relative at d_model 128."""
        sq = sum(float(p.grad.double().pow(2).sum()) for p in self.model.parameters()
                 if p.grad is not None)
        self.steps.setdefault(self.trainer.global_step, {})["grad_norm_f64"] = sq ** 0.5

    def post_step(self):
        s = self.trainer.global_step
        self.steps.setdefault(s, {})["step_s"] = time.perf_counter() - self._t0
        self.last_step = s
        if self._before is not None:
            self.param_rms(s)
        every = int(self.cfg["eval"]["interval"])
        if self.eval_sets and ((every > 0 and s % every == 0) or s == self.total):
            self.evaluate(s)
        if self.val_sets and (s % self.val_every == 0 or s == self.total):
            self.validate(s)

    def log_metrics(self, step, metrics):
        if step <= 0:
            return
        rec = self.steps.setdefault(step, {})
        for src, dst in (("train/CE loss", "loss"), ("train/Z loss", "z_loss"),
                         ("optim/total grad norm", "grad_norm"), ("optim/LR (group 0)", "lr"),
                         ("optim/step skipped", "skipped")):
            if src in metrics:
                rec[dst] = float(metrics[src])

    # Records ------------------------------------------------------------------------------
    def evaluate(self, step):
        for s in self.eval_sets:
            t0 = time.perf_counter()
            loss, n = s.loss(self.model)
            self.evals.append({"kind": "eval", "step": step, "set": s.label, "loss": loss,
                               "ppl": float(np.exp(loss)), "tokens": n, "instances": s.n,
                               "seconds": time.perf_counter() - t0})

    @torch.no_grad()
    def validate(self, step):
        t0 = time.perf_counter()
        held = {s.label: s.loss(self.model)[0] for s in self.val_sets}
        hsum, positions = 0.0, 0
        marginal = torch.zeros(self.V, dtype=torch.float64)
        for doc in self.fixed:
            z = self.model(doc[None, :]).double()[0]
            logp = torch.log_softmax(z, dim=-1)
            p = logp.exp()
            hsum += float(-(p * logp).sum())
            marginal += p.sum(0)
            positions += z.shape[0]
        m = marginal / max(1, positions)
        m = m[m > 0]
        self.vals.append({"step": step, "window": (self.window_first, step), "heldout": held,
                          "model_entropy": hsum / positions if positions else None,
                          "marginal_entropy_bits": float(-(m * torch.log2(m)).sum()),
                          "batch_entropy_bits": self.batch_bits,
                          "served_entropy_bits": unigram_bits(self.served),
                          "served_tokens": int(self.served.sum()),
                          "seconds": time.perf_counter() - t0})
        self.served[:] = 0
        self.window_first = step + 1

    def finish(self):
        """Writes metrics.jsonl and validation.jsonl (train losses are known only now)."""
        G = int(self.cfg["data"]["global_batch_tokens"])
        out, seen = list(self.info), self.first_step * G
        by_step = {}
        for s in sorted(self.steps):
            r = self.steps[s]
            if s <= self.first_step or "loss" not in r:
                continue
            seen += r.get("tokens", G)
            rec = {"kind": "train", "step": s, "loss": r["loss"], "z_loss": r.get("z_loss"),
                   "grad_norm": r.get("grad_norm"), "grad_norm_f64": r.get("grad_norm_f64"),
                   "lr": r.get("lr"),
                   "skipped": bool(r.get("skipped", 0.0) > 0), "tokens": r.get("tokens", G),
                   "tokens_seen": seen, "step_s": r.get("step_s"),
                   "tokens_per_s": r.get("tokens", G) / r["step_s"] if r.get("step_s") else None,
                   "instances": r.get("instances", []), "tokens_digest": r.get("tokens_digest")}
            by_step.setdefault(s, []).append(rec)
        for e in self.evals + self.rms:
            by_step.setdefault(e["step"], []).append(e)
        vlines = []
        for v in self.vals:
            lo, hi = v.pop("window")
            losses = [self.steps[s]["loss"] for s in range(lo, hi + 1) if "loss" in self.steps.get(s, {})]
            tl = float(np.mean(losses)) if losses else None
            rec = {"step": v["step"], "window_steps": hi - lo + 1, **v, "train_loss": tl,
                   "gap": {k: (tl - h if tl is not None else None) for k, h in v["heldout"].items()}}
            vlines.append(rec)
            by_step.setdefault(v["step"], []).append({**rec, "kind": "validation"})
        for s in sorted(by_step):
            out.extend(by_step[s])
        out.append({"kind": "info", "event": "end", "step": self.last_step, "tokens_seen": seen})
        with open(os.path.join(self.run_dir, "metrics.jsonl"), "w") as f:
            for r in out:
                f.write(json.dumps(r) + "\n")
        if vlines:
            with open(os.path.join(self.run_dir, "validation.jsonl"), "w") as f:
                for r in vlines:
                    f.write(json.dumps(r) + "\n")
