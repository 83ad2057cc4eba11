"""A trained YaRN checkpoint is the YaRN model everywhere it goes (issue 17, bug 2).

tests/configs/tiny.yaml on the real (padded) dolma2 vocabulary is trained for a few steps with
model.yarn_factor=4 model.yarn_old_context_len=32 (as stage 3 does, at toy size). The reference is
built here, independently of our writers: transformers' Olmo3ForCausalLM with an Olmo3Config made
from the run's own config.yaml (the YAML the user trained with: YaRN on the full-attention layer,
the faithful variant) and the checkpoint's weights read with numpy from the checkpoint's pieces.
Checks, each against that reference:
  1. `olmo info --checkpoint RUN --json` reports the YaRN fields of config.yaml;
  2. `olmo export RUN` writes config.json with YaRN (rope_parameters.full_attention and the
     legacy rope_scaling), weights bit-identical to the checkpoint, and transformers loading the
     export gives the reference's logits (rel. L2 <= 1e-6);
  3. `olmo evaluate-suites --model RUN` (the checkpoint itself): per-choice log-likelihoods of
     a few short items within 1e-6 rel. of the reference's (measured ~1e-8);
  4. `olmo generate RUN` (greedy, KV cache) == the reference's greedy generate token for token
     (a divergence is accepted only at a top-2 logit margin < 1e-4, reported);
  5. the same checks against a reference without YaRN must fail (the test can tell YaRN from no
     YaRN at this size: the differences are far above the
     tolerances, with one full-attention layer of four; see make_init).
Env: OLMO_BIN, OLMO_SOURCE_DIR, TIKTOKEN_CACHE_DIR. Exit 0 = pass.
"""
import json
import os
import tempfile

import numpy as np
import torch
import yaml
from safetensors.numpy import load_file
import transformers
from transformers import AutoModelForCausalLM, Olmo3Config, Olmo3ForCausalLM

HERE = os.path.dirname(os.path.abspath(__file__))
import dist_util as du  # noqa: E402
import olmo_test as ot
from olmo_test import check, finish
from olmo_test import tiny_data as td

SRC = os.environ.get("OLMO_SOURCE_DIR", ".")
EOS = 100257
torch.set_num_threads(1)
transformers.logging.set_verbosity_error()  # max_position_embeddings != factor x old context


def olmo(*args):
    """build/olmo on one OpenMP thread (exit 0 asserted); its stdout."""
    return ot.olmo(*args, env=dict(os.environ, OMP_NUM_THREADS="1")).stdout


def reference_model(run, step_dir, yarn=True):
    """transformers model from the run's config.yaml and the checkpoint's tensors."""
    cfg = yaml.safe_load(open(os.path.join(run, "config.yaml")))
    m = cfg["model"]
    n_layers = m["n_layers"]
    pat = m["window_pattern"]
    windows = [pat[i % len(pat)] for i in range(n_layers)]
    if m.get("force_full_last", 1) != 0:
        windows[-1] = -1
    types = ["full_attention" if w < 0 else "sliding_attention" for w in windows]
    sliding = [w for w in windows if w > 0][0]
    theta = float(m["rope_theta"])
    full = {"rope_type": "default", "rope_theta": theta}
    if yarn and float(m["yarn_factor"]) > 0:
        assert m.get("yarn_variant", "faithful") == "faithful"
        f = float(m["yarn_factor"])
        full = {"rope_type": "yarn", "rope_theta": theta, "factor": f,
                "original_max_position_embeddings": int(m["yarn_old_context_len"]),
                "beta_fast": float(m["yarn_beta_fast"]), "beta_slow": float(m["yarn_beta_slow"])}
    hc = Olmo3Config(vocab_size=m["vocab_size"], hidden_size=m["d_model"],
                     intermediate_size=m["ffn_hidden"], num_hidden_layers=n_layers,
                     num_attention_heads=m["n_heads"], num_key_value_heads=m["n_kv_heads"],
                     head_dim=m["d_model"] // m["n_heads"], rms_norm_eps=float(m["norm_eps"]),
                     max_position_embeddings=cfg["data"]["seq_len"], sliding_window=sliding,
                     layer_types=types, pad_token_id=None, eos_token_id=None, bos_token_id=None,
                     rope_parameters={"full_attention": full,
                                      "sliding_attention": {"rope_type": "default",
                                                            "rope_theta": theta}},
                     attn_implementation="eager")
    model = Olmo3ForCausalLM(hc).float().eval()
    t = du.tensors(step_dir)
    sd = {k: torch.from_numpy(v.copy()) for k, v in t.items() if not k.startswith("optim.")}
    missing, unexpected = model.load_state_dict(sd, strict=False)
    assert not unexpected and all("rotary" in k for k in missing), (missing, unexpected)
    return model, t


def make_init(path):
    """Random starting weights far from uniform attention (std 0.1, norm weights 1 +- 0.2), so
    that RoPE and YaRN change the outputs measurably (trained from the usual 0.02 init for a
    few steps, attention is nearly uniform and YaRN moves the logits by ~1e-5 only)."""
    torch.manual_seed(5)
    cfg = Olmo3Config(vocab_size=100352, hidden_size=64, intermediate_size=128,
                      num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                      head_dim=16, sliding_window=16, max_position_embeddings=64,
                      rms_norm_eps=1e-6, pad_token_id=None, eos_token_id=None,
                      bos_token_id=None)
    m = Olmo3ForCausalLM(cfg).float()
    with torch.no_grad():
        for _, p in m.named_parameters():
            p.copy_(1.0 + 0.2 * torch.randn_like(p) if p.dim() == 1 else 0.1 * torch.randn_like(p))
    m.save_pretrained(path)


def logits(model, ids):
    with torch.no_grad():
        return model(input_ids=torch.tensor([ids])).logits[0].double().numpy()


def rel_l2(a, b):
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


def loglik(model, prefix, cont):
    lp = torch.log_softmax(torch.tensor(logits(model, prefix + cont[:-1])), dim=-1)
    return float(sum(lp[len(prefix) - 1 + i, t] for i, t in enumerate(cont)))


def run_checks(model, run, step_dir, hf, enc, label, strict=True):
    """Returns the worst relative differences; with strict the checks count as failures."""
    out = {}
    rng = np.random.default_rng(3)
    seqs = [list(map(int, rng.integers(2, 100000, n))) for n in (20, 47, 64)]
    exported = AutoModelForCausalLM.from_pretrained(hf, dtype=torch.float32,
                                                    attn_implementation="eager").eval()
    out["export logits"] = max(rel_l2(logits(exported, s), logits(model, s)) for s in seqs)
    # evaluate-suites on the checkpoint itself.
    items = [{"id": f"q{i}", "context": ctx, "choices": ch, "gold": 0} for i, (ctx, ch) in
             enumerate([("The capital of France is", [" Paris", " Rome", " a large city"]),
                        ("Two plus two equals", [" four", " five"]),
                        ("A license grants permission to copy, modify and distribute the "
                         "software, provided that the above copyright notice appears in all",
                         [" copies", " versions of it", " cases"])])]
    suite = os.path.join(os.path.dirname(hf), "cont.jsonl")
    with open(suite, "w") as f:
        for it in items:
            f.write(json.dumps(it) + "\n")
    res = os.path.join(os.path.dirname(hf), "res.jsonl")
    olmo("evaluate-suites", "--model", run, "--max-len", "64", "--out", res, suite)
    ours = {x["id"]: x for x in map(json.loads, open(res)) if x["kind"] == "item"}
    worst = 0.0
    for it in items:
        prefix = ([EOS] + enc.encode(it["context"], disallowed_special=()))
        for c, ll in zip(it["choices"], ours[it["id"]]["ll"]):
            cont = enc.encode(c, disallowed_special=())
            assert len(prefix) + len(cont) <= 64
            ref = loglik(model, prefix, cont)
            worst = max(worst, abs(ll - ref) / abs(ref))
    out["evaluate-suites ll"] = worst
    # Greedy generation from the checkpoint.
    prompts = [seqs[0][:10], seqs[1][:30]]
    pf = os.path.join(os.path.dirname(hf), "prompts.txt")
    with open(pf, "w") as f:
        for p in prompts:
            f.write(" ".join(map(str, p)) + "\n")
    gen = [json.loads(x) for x in olmo("generate", run, "--prompt-ids", pf, "--tokens", "24",
                                       "--eos", "-1", "--json").splitlines() if x.strip().startswith("{")]
    mism = 0
    for p, g in zip(prompts, gen):
        ids = list(p)
        for tok in g["ids"]:
            lg = logits(model, ids)[-1]
            top = np.argsort(lg)[::-1]
            if tok != int(top[0]):
                if lg[top[0]] - lg[top[1]] >= 1e-4:
                    mism += 1
                break
            ids.append(tok)
    out["generate mismatches"] = mism
    if strict:
        check(out["export logits"] <= 1e-6, f"{label}: exported model's logits == reference",
              f"rel L2 {out['export logits']:.2e}")
        check(worst <= 1e-6, f"{label}: evaluate-suites on the checkpoint == reference",
              f"worst rel {worst:.2e}")
        check(mism == 0, f"{label}: generate on the checkpoint == reference greedy",
              f"{mism} prompt(s) diverged at a clear margin")
    return out


def main():
    import tiktoken
    enc = tiktoken.get_encoding("cl100k_base")
    with tempfile.TemporaryDirectory(prefix="olmo_yarn_ckpt_") as tmp:
        data = td.make_data(os.path.join(tmp, "data"))
        run, init = os.path.join(tmp, "run"), os.path.join(tmp, "init")
        make_init(init)
        ot.olmo("train", os.path.join(SRC, "tests", "configs", "tiny.yaml"), f"data.mix={data['mix']}",
                f"trainer.run_dir={run}", "trainer.max_steps=4", "model.vocab_size=100352",
                "model.yarn_factor=4", "model.yarn_old_context_len=32",
                f"trainer.init_from_hf={init}")
        step_dir = du.final_dir(run)
        cfg = yaml.safe_load(open(os.path.join(run, "config.yaml")))
        # 1. olmo info on the checkpoint
        info = json.loads(olmo("info", "--checkpoint", run, "--json"))["config"]
        check(info.get("yarn_factor") == 4 and info.get("yarn_old_context_len") == 32 and
              info.get("yarn_variant") == cfg["model"]["yarn_variant"],
              "olmo info --checkpoint: YaRN fields of config.yaml", json.dumps(info))
        # 2. export of the trained checkpoint
        hf = os.path.join(tmp, "hf")
        olmo("export", run, "--out", hf)
        hc = json.load(open(os.path.join(hf, "config.json")))
        fa = hc["rope_parameters"]["full_attention"]
        check(fa.get("rope_type") == "yarn" and
              fa.get("factor") == 4 and fa.get("original_max_position_embeddings") == 32 and
              hc["rope_parameters"]["sliding_attention"]["rope_type"] == "default" and
              hc.get("rope_scaling") is not None, "export config.json: YaRN on full attention", json.dumps(hc["rope_parameters"]))
        model, t = reference_model(run, step_dir)
        W = load_file(os.path.join(hf, "model.safetensors"))
        check(all(np.array_equal(W[k], t[k]) for k in W) and len(W) == len(
                  [k for k in t if not k.startswith("optim.")]),
              "export weights == checkpoint tensors (bitwise)", f"{len(W)} tensors")
        r = run_checks(model, run, step_dir, hf, enc, "YaRN")
        print("  figures:", {k: (f"{v:.2e}" if isinstance(v, float) else v) for k, v in r.items()})
        # 5. The comparison can tell: a reference without YaRN must disagree.
        plain, _ = reference_model(run, step_dir, yarn=False)
        r0 = run_checks(plain, run, step_dir, hf, enc, "no-YaRN reference", strict=False)
        check(r0["export logits"] > 1e-3 and r0["evaluate-suites ll"] > 1e-4,
              "a reference without YaRN is told apart (export logits, evaluate-suites)",
              f"export rel L2 {r0['export logits']:.2e}, ll rel {r0['evaluate-suites ll']:.2e}")
    finish("yarn checkpoint")


if __name__ == "__main__":
    main()
