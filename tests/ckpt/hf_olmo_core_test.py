"""HF checkpoint <-> OLMo-core run in one command each (issue 38 item 6), end to end with
OLMo-core's own code on tests/configs/tiny.yaml's shape:
  1. `olmo ckpt hf-to-olmo-core HF RUN --config tiny.yaml` on a transformers-saved random
     Olmo3ForCausalLM (transformers' save_pretrained, not our writer) writes RUN/config.yaml and
     RUN/step0; OLMo-core's load_keys reads the embedding and LM head of RUN/step0 bitwise equal
     to the HF file (read with the safetensors package);
  2. OLMo-core's Trainer (scripts/olmo_core_run.py) resumes RUN for 2 steps, and its losses are
     bitwise those of OLMo-core's Trainer started from the HF dir itself (--init-hf): the run
     holds exactly the HF weights and a fresh optimizer/trainer state;
  3. `olmo ckpt olmo-core-to-hf RUN/step0 HF2`: every tensor of HF2/model.safetensors is
     bitwise the original's; transformers loads HF2; RUN (newest: step2) -> HF3 holds the
     trained weights (they moved) and transformers loads it;
  4. bad input: no --config, another architecture: exit 1 naming the problem, no step0.
"""
import os

import numpy as np

from olmo_test import check, finish, olmo, tmp_dir
from olmo_test import tiny_data
from olmo_test.refs import load_hf, reference, tiny_hf_model


def st_tensors(path):
    from safetensors.numpy import load_file
    return load_file(path)


def main():
    import torch
    with tmp_dir("hf_olmo_core") as tmp:
        d = tiny_data.make_data(os.path.join(tmp, "data"))
        cfg = tiny_data.tiny_config()
        over = [f"data.mix={d['mix']}", "trainer.max_steps=2", "trainer.save_interval=2"]
        hf = os.path.join(tmp, "hf")
        torch.manual_seed(11)
        tiny_hf_model(64).save_pretrained(hf, safe_serialization=True)
        want = st_tensors(os.path.join(hf, "model.safetensors"))

        # 1. HF -> OLMo-core run.
        run = os.path.join(tmp, "run")
        p = olmo("ckpt", "hf-to-olmo-core", hf, run, "--config", cfg, *over, check=False)
        print(p.stdout[-400:], p.stderr[-1500:])
        check(p.returncode == 0 and os.path.isdir(f"{run}/step0/model_and_optim")
              and os.path.exists(f"{run}/config.yaml"),
              "hf-to-olmo-core writes RUN/config.yaml and RUN/step0 (OLMo-core checkpoint)")
        from olmo_core.distributed.checkpoint import load_keys
        emb, head = load_keys(f"{run}/step0/model_and_optim",
                              ["model.embeddings.weight", "model.lm_head.w_out.weight"])
        check(np.array_equal(emb.numpy().view(np.uint32), want["model.embed_tokens.weight"].view(np.uint32))
              and np.array_equal(head.numpy().view(np.uint32), want["lm_head.weight"].view(np.uint32)),
              "OLMo-core's load_keys reads the HF embedding and LM head bitwise")

        # 2. OLMo-core resumes the run == OLMo-core started from the HF dir.
        p = reference(cfg, over, run, noise_floor=False)
        check(p.returncode == 0 and os.path.isdir(f"{run}/step2/model_and_optim"),
              "OLMo-core's Trainer resumes RUN and trains steps 1-2")
        direct = os.path.join(tmp, "direct")
        p = reference(cfg, over + [f"trainer.init_from_hf={hf}"], direct, noise_floor=False)
        check(p.returncode == 0, "OLMo-core's Trainer from the HF dir (--init-hf)")
        from olmo_test import read_metrics
        a = [(r["step"], r["loss"], r["grad_norm"]) for r in read_metrics(run)]
        b = [(r["step"], r["loss"], r["grad_norm"]) for r in read_metrics(direct)]
        check(a == b and len(a) == 2, "the resumed run's losses and grad norms are bitwise those "
              "of OLMo-core from the HF weights", f"{a} vs {b}")

        # 3. OLMo-core -> HF, bitwise round trip.
        hf2 = os.path.join(tmp, "hf2")
        p = olmo("ckpt", "olmo-core-to-hf", f"{run}/step0", hf2, check=False)
        print(p.stdout[-400:], p.stderr[-1500:])
        check(p.returncode == 0, "olmo-core-to-hf RUN/step0 -> HF2")
        got = st_tensors(os.path.join(hf2, "model.safetensors")) if p.returncode == 0 else {}
        check(sorted(got) == sorted(want) and all(
            got[k].dtype == want[k].dtype and np.array_equal(got[k].view(np.uint32), want[k].view(np.uint32))
            for k in want), f"HF -> OLMo-core -> HF: all {len(want)} tensors bitwise equal")
        if p.returncode == 0:
            m = load_hf(hf2)
            x = torch.tensor([[3, 17, 200, 5]])
            check(bool(torch.isfinite(m(x).logits).all()), "transformers loads HF2")
        hf3 = os.path.join(tmp, "hf3")
        p = olmo("ckpt", "olmo-core-to-hf", run, hf3, check=False)
        check(p.returncode == 0 and "step 2" in p.stdout, "olmo-core-to-hf RUN takes the newest (step2)",
              p.stdout[-300:] + p.stderr[-600:])
        if p.returncode == 0:
            trained = st_tensors(os.path.join(hf3, "model.safetensors"))
            check(not np.array_equal(trained["lm_head.weight"], want["lm_head.weight"]),
                  "HF3 holds the trained weights")
            load_hf(hf3)

        # 4. Bad input.
        bad = os.path.join(tmp, "bad")
        p = olmo("ckpt", "hf-to-olmo-core", hf, bad, *over, check=False)
        check(p.returncode == 1 and "--config" in p.stderr, "no --config: exit 1 naming --config",
              p.stderr[-300:])
        p = olmo("ckpt", "hf-to-olmo-core", hf, bad, "--config", cfg, *over, "model.ffn_hidden=256",
                 check=False)
        check(p.returncode == 1 and "another architecture" in p.stderr
              and not os.path.exists(f"{bad}/step0"), "another architecture: exit 1, no step0",
              p.stderr[-300:])
    finish("ckpt_hf_olmo_core")


if __name__ == "__main__":
    main()
