"""20 full training steps of a tiny OLMo 3: olmo.cpp (`build/olmo train`) against an independent
PyTorch run of the same recipe, from the same weights and batches.

PyTorch side: transformers' Olmo3ForCausalLM (eager attention, fp32) built at random and saved
with save_pretrained; our trainer starts from that directory (trainer.init_from_hf). The
reference's batches come from OLMo-core's own data loader on the same token file (seed 7,
8 x 64-token instances per step, as tests/configs/tiny.yaml; olmo_test/olmo_core_order.py, which also checks
them against numpy's PCG64 order), never from our run; that they equal the instance indices our
trainer logged (trainer.log_batch_indices) is asserted separately. The reference step is
OLMo-core's recipe written out with OLMo-core's own classes where they exist:
  loss = sum over the 4 micro-batches of (CE_sum + 1e-5 * sum lse^2) / (step's target tokens),
  gradients accumulated, torch.nn.utils.clip_grad_norm_(1.0), olmo_core.optim.SkipStepAdamW
  (betas 0.9/0.95, eps 1e-8, weight decay 0.1, embedding group 0.0) fed latest_loss /
  latest_grad_norm, LR from olmo_core.optim.CosWithWarmup(warmup=5, alpha_f=0.1).get_lr with
  1-based steps and t_max 20.
Checks: per-step CE loss within 1e-4 relative, LR equal to 1e-12, grad norm within 1e-3
relative; and the held-out evaluation (one document per padded instance, OLMo-core's
NumpyPaddedFSLDataset semantics written out here with numpy) at step 0 and after step 20 within
1e-4 relative.
"""
import os
import shutil
import tempfile

import numpy as np
import torch

import olmo_test as ot
from olmo_test import check, finish
from olmo_test import olmo_core_order
from olmo_test import tiny_data as td
from olmo_test.refs import tiny_hf_model

from olmo_core.optim import CosWithWarmup, SkipStepAdamW

torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
T, MICRO, STEPS, LR, Z = 64, 2, 20, 3e-3, 1e-5
GLOBAL_INSTANCES, SEED, VOCAB, EOS, PAD = 8, 7, 512, 0, 1  # tests/configs/tiny.yaml


def step_loss(model, ids, total):
    """Accumulates gradients of sum (CE + Z*lse^2)/total over micro-batches; returns sum CE/total."""
    ce_total = 0.0
    for i in range(0, ids.shape[0], MICRO):
        x = ids[i:i + MICRO]
        tgt = torch.full_like(x, -100)
        tgt[:, :-1] = x[:, 1:]
        logits = model(input_ids=x).logits.float()
        lse = torch.logsumexp(logits, dim=-1)
        valid = tgt != -100
        picked = logits.gather(-1, tgt.clamp(min=0).unsqueeze(-1)).squeeze(-1)
        ce = ((lse - picked) * valid).sum()
        z = ((lse ** 2) * valid).sum()
        ((ce + Z * z) / total).backward()
        ce_total += float(ce.detach())
    return ce_total / total


def eval_loss(model, val_tokens, eos=0, pad=1):
    """OLMo-core padded eval: one doc (EOS inclusive, truncated to T) per instance."""
    docs, start = [], 0
    for i, t in enumerate(val_tokens):
        if t == eos:
            docs.append(val_tokens[start:i + 1][:T])
            start = i + 1
    ce, n = 0.0, 0
    with torch.no_grad():
        for d in docs:
            x = torch.tensor(np.asarray(d, dtype=np.int64)).unsqueeze(0)
            logits = model(input_ids=x).logits.float()[0]
            lse = torch.logsumexp(logits, -1)
            tgt = x[0, 1:]
            ce += float((lse[:-1] - logits[:-1].gather(-1, tgt.unsqueeze(-1)).squeeze(-1)).sum())
            n += len(d) - 1
    return ce / n


def main():
    tmp = tempfile.mkdtemp(prefix="olmo_hfpar_")
    try:
        d = td.make_data(tmp)
        torch.manual_seed(0)
        model = tiny_hf_model(T)
        hf = os.path.join(tmp, "hf")
        model.save_pretrained(hf)

        run = os.path.join(tmp, "run")
        ot.olmo("train", td.tiny_config(), f"data.mix={d['mix']}", f"trainer.run_dir={run}",
                f"trainer.init_from_hf={hf}", "trainer.log_batch_indices=true",
                f"eval.sets.val={d['val']}")
        ours = {r["step"]: r for r in ot.read_metrics(run)}
        evals = {r["step"]: r for r in ot.read_metrics(run, "eval")}
        check(sorted(ours) == list(range(1, STEPS + 1)), f"{len(ours)} steps logged")
        ref_batches = olmo_core_order.batches(olmo_core_order.token_files(tmp), T, GLOBAL_INSTANCES,
                                              SEED, VOCAB, EOS, PAD, STEPS)
        check(all(ours[s]["instances"] == ref_batches[s - 1] for s in ours),
              "our trainer's batches (logged instance indices) == OLMo-core's loader's")

        data = np.fromfile(os.path.join(tmp, "train", "part-0.npy"), dtype=np.uint32)
        inst = data[: (len(data) // T) * T].reshape(-1, T).astype(np.int64)
        val = np.fromfile(os.path.join(d["val"], "part-0.npy"), dtype=np.uint32)

        e0 = eval_loss(model, val)
        check(abs(evals[0]["loss"] - e0) <= 1e-4 * e0, f"eval step 0: ours {evals[0]['loss']:.7f} torch {e0:.7f}")

        emb = [p for n, p in model.named_parameters() if n == "model.embed_tokens.weight"]
        rest = [p for n, p in model.named_parameters() if n != "model.embed_tokens.weight"]
        opt = SkipStepAdamW([{"params": emb, "weight_decay": 0.0}, {"params": rest}], lr=LR,
                            betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
        sched = CosWithWarmup(warmup=5, alpha_f=0.1)
        worst = 0.0
        for s in range(1, STEPS + 1):
            r = ours[s]
            ids = torch.tensor(inst[ref_batches[s - 1]])
            total = ids.shape[0] * (T - 1)
            opt.zero_grad(set_to_none=True)
            loss = step_loss(model, ids, total)
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            lr = sched.get_lr(LR, s, STEPS)
            for g in opt.param_groups:
                g["lr"] = lr
            opt.latest_loss = torch.tensor(loss)
            opt.latest_grad_norm = norm.detach()
            opt.step()
            rel = abs(r["loss"] - loss) / loss
            worst = max(worst, rel)
            print(f"step {s:2d}: loss ours {r['loss']:.7f} torch {loss:.7f} rel {rel:.1e}  "
                  f"|g| {r['grad_norm']:.5f} / {float(norm):.5f}  lr {r['lr']:.6e} / {lr:.6e}")
            check(rel <= 1e-4, f"step {s} loss rel {rel:.2e}")
            check(abs(r["lr"] - lr) <= 1e-12, f"step {s} lr")
            check(abs(r["grad_norm"] - float(norm)) <= 1e-3 * float(norm), f"step {s} grad norm")
        print(f"worst per-step loss rel diff: {worst:.2e}")
        e20 = eval_loss(model, val)
        check(abs(evals[STEPS]["loss"] - e20) <= 1e-4 * e20,
              f"eval step 20: ours {evals[STEPS]['loss']:.7f} torch {e20:.7f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish("hf_parity_test")


if __name__ == "__main__":
    main()
