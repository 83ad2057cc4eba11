"""The stage-3 trainer really passes document ids and the YaRN table to the model (README "Three
stages"; stage_chain_test.py checks only what the configs and checkpoints say).

A tiny OLMo 3 with YaRN (factor 4 over a 16-token old context, faithful: full-attention layers)
is written by `olmo export --config tests/configs/tiny.yaml ... --no-tokenizer`; `olmo train` starts
from it (trainer.init_from_hf) with data.generate_doc_lengths=true (intra-document masking:
the tiny token file has an EOS every 40-120 tokens, so most 64-token instances hold a document
boundary) for one step. Independent reference for that step: transformers' Olmo3ForCausalLM
(eager, fp32) loaded from the same export (its rope_scaling applies YaRN to the full-attention
layers), on the batch OLMo-core's own loader gives (olmo_test/olmo_core_order.py), with explicit 4-D
masks per layer type (query i sees key j iff j <= i, same document, and on sliding layers
i - j < 16; documents end after each EOS; positions not reset), labels = next token, the last
position ignored; loss = sum CE / labels, gradient of (CE + 1e-5 sum lse^2) / labels.
Checks: step-1 loss and pre-clip gradient norm each within 1e-6 relative of the reference
(measured 2026-12-03: 6.4e-9 and 3.5e-8); and the check can fail: the same reference without
the document mask (measured: loss 6.2e-4, norm 9.5e-3 away) and without YaRN (9.7e-5, 4.1e-3)
must each differ from ours by more than 20x those bounds.
"""
import json
import os
import shutil
import tempfile

import numpy as np
import torch

import olmo_test as ot
from olmo_test import check, finish
from olmo_test import olmo_core_order
from olmo_test import tiny_data as td
from olmo_test.refs import load_hf

torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
T, G, SEED, VOCAB, EOS, PAD, WINDOW, Z = 64, 8, 7, 512, 0, 1, 16, 1e-5
YARN = ["model.yarn_factor=4", "model.yarn_old_context_len=16"]
LOSS_TOL, NORM_TOL = 1e-6, 1e-6


def doc_ids(x):
    """Document index per position: a new document starts after each EOS."""
    d = np.zeros(len(x), dtype=np.int64)
    for t in range(1, len(x)):
        d[t] = d[t - 1] + (x[t - 1] == EOS)
    return d


def reference(model, ids, doc_mask):
    """(loss, grad norm) of one step on ids [B, T]."""
    model.zero_grad(set_to_none=True)
    B = ids.shape[0]
    masks = None
    if doc_mask:
        doc = torch.tensor(np.stack([doc_ids(r) for r in ids.numpy()]))
        i = torch.arange(T)[:, None]
        j = torch.arange(T)[None, :]
        full = (doc[:, :, None] == doc[:, None, :]) & (j <= i)
        slide = full & (i - j < WINDOW)
        neg = torch.finfo(torch.float32).min
        masks = {k: torch.where(ok, 0.0, neg).to(torch.float32)[:, None]
                 for k, ok in (("full_attention", full), ("sliding_attention", slide))}
    logits = model(input_ids=ids, attention_mask=masks).logits.float()
    tgt = torch.full_like(ids, -100)
    tgt[:, :-1] = ids[:, 1:]
    valid = tgt != -100
    lse = torch.logsumexp(logits, -1)
    picked = logits.gather(-1, tgt.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    ce = ((lse - picked) * valid).sum()
    z = ((lse ** 2) * valid).sum()
    n = int(valid.sum())
    ((ce + Z * z) / n).backward()
    norm = torch.sqrt(sum((p.grad.double() ** 2).sum() for p in model.parameters()))
    return float(ce.detach()) / n, float(norm)


def main():
    tmp = tempfile.mkdtemp(prefix="olmo_stage3_wiring_")
    try:
        d = td.make_data(tmp)
        hf = os.path.join(tmp, "hf")
        ot.olmo("export", "--config", td.tiny_config(), *YARN, "--seed", "5", "--no-tokenizer",
                "--out", hf)
        run = os.path.join(tmp, "run")
        ot.olmo("train", td.tiny_config(), f"data.mix={d['mix']}", f"trainer.run_dir={run}",
                f"trainer.init_from_hf={hf}", *YARN, "data.generate_doc_lengths=true",
                "trainer.max_steps=1", "trainer.log_batch_indices=true", "trainer.threads=1")
        ours = ot.read_metrics(run)[0]
        batch = olmo_core_order.batches(olmo_core_order.token_files(tmp), T, G, SEED, VOCAB, EOS,
                                        PAD, 1)[0]
        check(ours["instances"] == batch, "our batch == OLMo-core's loader's")
        data = np.fromfile(olmo_core_order.token_files(tmp)[0], dtype=np.uint32)
        ids = torch.tensor(data[: (len(data) // T) * T].reshape(-1, T)[batch].astype(np.int64))
        boundaries = int((ids[:, :-1] == EOS).sum())
        check(boundaries >= 4, f"the batch holds {boundaries} document boundaries")

        cfg = json.load(open(os.path.join(hf, "config.json")))
        check(cfg.get("rope_scaling", {}).get("rope_type") == "yarn", "the export carries YaRN")
        model = load_hf(hf)
        loss, norm = reference(model, ids, True)
        el = abs(ours["loss"] - loss) / loss
        en = abs(ours["grad_norm"] - norm) / norm
        print(f"step 1: loss ours {ours['loss']:.8f} torch {loss:.8f} (rel {el:.1e}); grad norm "
              f"ours {ours['grad_norm']:.6f} torch {norm:.6f} (rel {en:.1e})")
        check(el <= LOSS_TOL, f"step-1 loss rel {el:.1e} <= {LOSS_TOL:g}")
        check(en <= NORM_TOL, f"step-1 pre-clip grad norm rel {en:.1e} <= {NORM_TOL:g}")

        # Sensitivity: without the document mask / without YaRN the reference moves far more.
        l_nomask, n_nomask = reference(model, ids, False)
        plain = dict(cfg)
        plain.pop("rope_scaling", None)
        theta = cfg.get("rope_theta", 500000.0)
        rp = cfg.get("rope_parameters") or {}
        if "full_attention" in rp:
            theta = rp["full_attention"].get("rope_theta", theta)
            plain["rope_parameters"] = {k: {"rope_type": "default", "rope_theta": theta} for k in rp}
        else:
            plain["rope_parameters"] = {"rope_type": "default", "rope_theta": theta}
        pdir = os.path.join(tmp, "hf_plain")
        shutil.copytree(hf, pdir)
        json.dump(plain, open(os.path.join(pdir, "config.json"), "w"))
        m2 = load_hf(pdir)
        l_noyarn, n_noyarn = reference(m2, ids, True)
        for what, l, n in (("no document mask", l_nomask, n_nomask), ("no YaRN", l_noyarn, n_noyarn)):
            dl, dn = abs(ours["loss"] - l) / l, abs(ours["grad_norm"] - n) / n
            print(f"reference with {what}: loss rel {dl:.1e}, grad norm rel {dn:.1e}")
            check(dl > 20 * LOSS_TOL or dn > 20 * NORM_TOL,
                  f"reference with {what} is distinguishable from ours")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish("stage3_wiring_test")


if __name__ == "__main__":
    main()
