"""Parity of src/optim against OLMo-core's own classes (ai2-olmo-core from PyPI).

1. Optimizer trajectory: deterministic fp32 params (an embedding with weight_decay 0 and four
   decayed tensors, as OLMo 3's groups) and 90 steps of gradients + losses, including a loss spike
   and a grad-norm spike after the skip-step window is active (>= 64 values). OLMo-core runs it:
   TransformerTrainModule._clip_grad_norm (max_grad_norm 1.0), SkipStepAdamW (foreach, betas
   (0.9, 0.95), eps 1e-8, wd 0.1, rolling_interval_length 128, sigma 6) and CosWithWarmup.set_lr
   with 1-based global_step. The C++ replay binary (tests/optim_parity_replay) replays the same
   inputs twice: with torch's grad norms fed in ("torch_norm": AdamW + skip-step + schedule in
   isolation) and with its own norm ("own_norm"). torch's CPU sqrt is MKL VML's (within 1 ulp,
   not IEEE correctly rounded; CUDA's sqrtf, which OLMo 3 trained with, and ours are correctly
   rounded), so OLMo-core runs twice: with torch._foreach_sqrt swapped for a correctly rounded
   one (numpy) the torch_norm replay must be bit-identical; stock OLMo-core must agree with the
   own_norm replay within fp32 rounding: |dp| <= 1e-5 of each element's path length
   sum_t |p_t - p_{t-1}| and <= 5e-6 of the tensor's rms, grad norms within 1e-6. We compare parameters after every step, moments and step counts at the end, skip
   decisions, grad norms and learning rates.
2. Schedules: OLMo-core's CosWithWarmup, HalfCosWithWarmup, LinearWithWarmup, ConstantScheduler,
   ConstantWithWarmup and WSD get_lr over many steps and configs; the C++ factory built from the
   same config JSON must give bit-identical doubles.
"""
import json
import math
import os
import subprocess
import sys
import tempfile
import types

import numpy as np
import torch

from olmo_core.optim.adamw import SkipStepAdamW
from olmo_core.optim import scheduler as sch
from olmo_core.train.train_module.transformer.train_module import TransformerTrainModule

BIN = os.path.join(os.environ.get("OLMO_BINARY_DIR", "build"), "tests", "optim_parity_replay")
STEPS = 90
LOSS_SPIKE_STEP = 72
GRAD_SPIKE_STEP = 80
LR0 = 1e-2


def make_inputs():
    g = torch.Generator().manual_seed(1234)
    shapes = [("embeddings.weight", (96, 24), 0.0), ("blocks.0.attention.w_q.weight", (24, 24), 0.1),
              ("blocks.0.attention_norm.weight", (24,), 0.1), ("blocks.0.feed_forward.w1.weight", (64, 24), 0.1),
              ("lm_head.w_out.weight", (96, 24), 0.1)]
    params = [(n, (torch.randn(s, generator=g) * 0.02).float(), wd) for n, s, wd in shapes]
    numel = sum(p.numel() for _, p, _ in params)
    grads, losses = [], []
    for s in range(1, STEPS + 1):
        sigma = 0.004 + 0.02 * float(torch.rand((), generator=g))  # norm ~0.4 .. 2.4: clip on and off
        if s == GRAD_SPIKE_STEP:
            sigma *= 300.0
        grads.append((torch.randn(numel, generator=g) * sigma).float())
        loss = 3.0 + 2.0 * math.exp(-s / 30.0) + 0.05 * float(torch.randn((), generator=g))
        if s == LOSS_SPIKE_STEP:
            loss += 8.0
        losses.append(float(np.float32(loss)))
    return params, grads, losses


def ieee_foreach_sqrt(tensors):
    return [torch.from_numpy(np.sqrt(t.numpy())) for t in tensors]


def ieee_sqrt_method(t):
    return torch.from_numpy(np.asarray(np.sqrt(t.numpy())))


def run_olmo_core(params, grads, losses, sched, t_max, ieee_sqrt):
    """OLMo-core's classes; with ieee_sqrt the two sqrt primitives its foreach AdamW uses
    (torch._foreach_sqrt on exp_avg_sq, Tensor.sqrt on the bias correction) are correctly rounded."""
    stock = (torch._foreach_sqrt, torch.Tensor.sqrt)
    if ieee_sqrt:
        torch._foreach_sqrt, torch.Tensor.sqrt = ieee_foreach_sqrt, ieee_sqrt_method
    try:
        return _run_olmo_core(params, grads, losses, sched, t_max)
    finally:
        torch._foreach_sqrt, torch.Tensor.sqrt = stock


def _run_olmo_core(params, grads, losses, sched, t_max):
    tensors = [torch.nn.Parameter(p.clone()) for _, p, _ in params]
    groups = [{"params": [t], "weight_decay": wd} for t, (_, _, wd) in zip(tensors, params) if wd == 0.0]
    groups.append({"params": [t for t, (_, _, wd) in zip(tensors, params) if wd != 0.0]})
    opt = SkipStepAdamW(groups, lr=LR0, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1,
                        rolling_interval_length=128, sigma_factor=6, foreach=True)
    module = types.SimpleNamespace(model=torch.nn.ParameterList(tensors))
    traj, lrs, norms, skipped = [], [], [], []
    for s in range(1, STEPS + 1):
        off = 0
        for t in tensors:
            t.grad = grads[s - 1][off:off + t.numel()].view_as(t).clone()
            off += t.numel()
        opt.latest_loss = torch.tensor(losses[s - 1], dtype=torch.float32)   # train_batch
        norm = TransformerTrainModule._clip_grad_norm(module, 1.0)            # optim_step
        opt.latest_grad_norm = norm
        trainer = types.SimpleNamespace(global_step=s, max_steps=t_max)
        for grp in opt.param_groups:
            lr = sched.set_lr(grp, trainer)
        opt.step()
        lrs.append(lr)
        norms.append(float(norm))
        skipped.append(int(opt.step_skipped.item()))
        traj.append(torch.cat([t.detach().reshape(-1) for t in tensors]).clone())
    state = [opt.state[t] for t in tensors]
    m = torch.cat([st["exp_avg"].reshape(-1) for st in state])
    v = torch.cat([st["exp_avg_sq"].reshape(-1) for st in state])
    steps = [float(st["step"]) for st in state]
    return torch.stack(traj), lrs, norms, skipped, m, v, steps


SCHEDULES = [
    ({"name": "cos_with_warmup", "warmup": 10, "alpha_f": 0.1}, 90),
    ({"name": "cos_with_warmup", "warmup_fraction": 0.15, "alpha_f": 0.0, "warmup_min_lr": 1e-5}, 333),
    ({"name": "cos_with_warmup", "warmup": 2000, "alpha_f": 0.1}, 1192093),  # OLMo 3 stage 1 part 1
    ({"name": "half_cos_with_warmup", "warmup": 597046, "alpha_f": 0.1}, 1668931),  # stage 1 part 2
    ({"name": "half_cos_with_warmup", "warmup": 7, "alpha_f": 0.2, "t_max": 50}, 1000),
    ({"name": "linear_with_warmup", "warmup": 0, "alpha_f": 0.0}, 47684),  # stage 2
    ({"name": "linear_with_warmup", "warmup": 200, "alpha_f": 0.0}, 11921),  # stage 3
    ({"name": "linear_with_warmup", "warmup_fraction": 0.1, "alpha_f": 0.1, "t_max": 77}, 999),
    ({"name": "constant"}, 100),
    ({"name": "constant_with_warmup", "warmup": 25, "warmup_min_lr": 1e-6}, 100),
    ({"name": "wsd", "warmup": 10, "decay_fraction": 0.2, "decay_min_lr": 1e-5}, 101),
    ({"name": "wsd", "warmup_fraction": 0.05, "decay": 13}, 150),
    ({"name": "wsd", "warmup": 3}, 45),  # default decay_fraction 0.1, round() half-to-even: 4.5 -> 4
]
LR_PEAKS = [3e-4, 2.0712352850360292e-4, 1e-2]

PY_CLASSES = {"cos_with_warmup": sch.CosWithWarmup, "half_cos_with_warmup": sch.HalfCosWithWarmup,
              "linear_with_warmup": sch.LinearWithWarmup, "constant": sch.ConstantScheduler,
              "constant_with_warmup": sch.ConstantWithWarmup, "wsd": sch.WSD}


def schedule_points(t_max):
    pts = set(range(0, min(t_max, 400) + 1)) | {t_max - 1, t_max, t_max + 1, t_max + 50}
    pts |= {int(x) for x in np.linspace(0, t_max + 10, 300)}
    return sorted(pts)


def main():
    params, grads, losses = make_inputs()
    numel = sum(p.numel() for _, p, _ in params)
    t_max = STEPS
    cfg0 = SCHEDULES[0][0]
    sched = sch.CosWithWarmup(warmup=cfg0["warmup"], alpha_f=cfg0["alpha_f"])
    runs = {ieee: run_olmo_core(params, grads, losses, sched, t_max, ieee) for ieee in (True, False)}
    traj, lrs, norms, skipped, m, v, steps = runs[True]
    sizes = [p.numel() for _, p, _ in params]
    assert skipped[LOSS_SPIKE_STEP - 1] == 1 and skipped[GRAD_SPIKE_STEP - 1] == 1, skipped
    assert sum(skipped) == 2, f"unexpected skips: {skipped}"

    with tempfile.TemporaryDirectory(prefix="olmo_optim_parity_") as d:
        np.concatenate([p.reshape(-1).numpy() for _, p, _ in params]).astype("<f4").tofile(f"{d}/init.bin")
        torch.stack(grads).numpy().astype("<f4").tofile(f"{d}/grads.bin")
        groups, off = [], 0
        for name, p, wd in params:
            groups.append({"name": name, "offset": off, "numel": p.numel(), "weight_decay": wd})
            off += p.numel()
        sched_jobs = []
        for cfg, tm in SCHEDULES:
            pts = schedule_points(tm)
            for lr0 in LR_PEAKS:
                kw = {k: v for k, v in cfg.items() if k != "name"}
                if cfg["name"] == "wsd" and "decay" in kw:
                    kw["decay_fraction"] = None
                obj = PY_CLASSES[cfg["name"]](**kw)
                sched_jobs.append({"config": cfg, "t_max": tm, "lr0": lr0, "points": pts,
                                   "expected": [obj.get_lr(lr0, c, tm) for c in pts]})
        meta = {"numel": numel, "steps": STEPS, "t_max": t_max, "lr0": LR0, "groups": groups,
                "losses": losses, "torch_norms": norms, "schedule": cfg0, "schedules": sched_jobs}
        with open(f"{d}/meta.json", "w") as f:
            json.dump(meta, f)
        for mode in ("torch_norm", "own_norm"):
            r = subprocess.run([BIN, d, mode], capture_output=True, text=True)
            sys.stdout.write(r.stdout)
            if r.returncode != 0:
                sys.stderr.write(r.stderr)
                raise SystemExit(f"{BIN} {mode} failed with rc {r.returncode}")
            traj, lrs, norms, skipped, m, v, steps = runs[mode == "torch_norm"]
            out = json.load(open(f"{d}/out_{mode}.json"))
            ctraj = np.fromfile(f"{d}/traj_{mode}.bin", dtype="<f4").reshape(STEPS, numel)
            cm = np.fromfile(f"{d}/m_{mode}.bin", dtype="<f4")
            cv = np.fromfile(f"{d}/v_{mode}.bin", dtype="<f4")
            ref = traj.numpy()
            assert out["skipped"] == skipped, f"{mode}: skip decisions differ: {out['skipped']} vs {skipped}"
            assert out["lrs"] == lrs, f"{mode}: learning rates differ"
            cnorm = np.array(out["norms"], dtype=np.float64)
            norm_rel = float(np.max(np.abs(cnorm - np.array(norms)) / np.array(norms)))
            absd = np.abs(ctraj.astype(np.float64) - ref)
            rel = float(np.max(absd / np.maximum(np.abs(ref), 1e-30)))
            rel_big = float(np.max((absd / np.abs(ref))[np.abs(ref) > 1e-2]))
            rel_rms, off = 0.0, 0
            for n_ in sizes:
                blk = ref[:, off:off + n_]
                rms = np.sqrt(np.mean(blk.astype(np.float64) ** 2, axis=1, keepdims=True))
                rel_rms = max(rel_rms, float(np.max(absd[:, off:off + n_] / rms)))
                off += n_
            # Error relative to each element's path length sum_t |p_t - p_{t-1}| (fp32 rounding
            # contributes a few ulps of each step's update).
            init = np.concatenate([p.reshape(-1).numpy() for _, p, _ in params]).astype(np.float64)
            path = np.cumsum(np.abs(np.diff(np.vstack([init[None], ref.astype(np.float64)]), axis=0)), axis=0)
            rel_path = float(np.max(absd / np.maximum(path, 1e-30)))
            n_diff = int(np.count_nonzero(ctraj != ref))
            gsteps = out["steps"]
            m_rel = float(np.max(np.abs(cm - m.numpy()) / np.maximum(np.abs(m.numpy()), 1e-30)))
            v_rel = float(np.max(np.abs(cv - v.numpy()) / np.maximum(np.abs(v.numpy()), 1e-30)))
            vs = "OLMo-core with IEEE sqrt" if mode == "torch_norm" else "stock OLMo-core (MKL sqrt)"
            print(f"[{mode} vs {vs}] {STEPS} steps, {numel} params, skipped steps "
                  f"{[i + 1 for i, s in enumerate(skipped) if s]}: params max |dp|/rms(p) {rel_rms:.3e}, max |dp|/path length {rel_path:.3e}, "
                  f"max elementwise rel {rel:.3e} (|p|>1e-2: {rel_big:.3e}), differing values "
                  f"{n_diff}/{ctraj.size}, "
                  f"exp_avg max rel {m_rel:.3e}, exp_avg_sq max rel {v_rel:.3e}, grad norm max rel "
                  f"{norm_rel:.3e}, step counts C++ {gsteps} OLMo-core {steps}")
            assert gsteps == steps, f"{mode}: step counts {gsteps} vs {steps}"
            if mode == "torch_norm":
                assert n_diff == 0 and m_rel == 0 and v_rel == 0, f"{mode}: not bit-identical"
            else:
                assert rel_path <= 1e-5 and rel_rms <= 5e-6 and norm_rel <= 1e-6, \
                    f"{mode}: params/norms differ by more than fp32 rounding"
        sres = json.load(open(f"{d}/out_torch_norm.json"))["schedules"]
        n_pts = 0
        for job, got in zip(sched_jobs, sres):
            assert got == job["expected"], (
                f"schedule {job['config']} lr0={job['lr0']}: first mismatch at "
                f"{next(c for c, a, b in zip(job['points'], got, job['expected']) if a != b)}")
            n_pts += len(got)
        print(f"schedules: {len(sched_jobs)} (config, lr0) cases, {n_pts} points, all bit-identical")
    print("OK")


if __name__ == "__main__":
    main()
