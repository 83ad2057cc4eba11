"""Parity of `olmo evaluate-suites` (src/eval/benchmark.*, exposure.*) with an independent scorer:
HF transformers' Olmo3ForCausalLM (eager attention, fp32) and tiktoken's cl100k_base.

1. A small random Olmo3ForCausalLM on the real dolma2 vocab (100352 padded rows; 4 layers, GQA,
   sliding window 16 on layers 0-2, full on layer 3; weights std 0.1 and norm weights 1 +- 0.2 so
   the next-token distributions are far from uniform) is saved with save_pretrained to A.
2. `olmo evaluate-suites --model A --save-hf B` scores the first N items of every checked-in
   suite (evalsets/*.jsonl) and the canaries of a synthetic canaries.json (same format as the
   corpus'), and writes the weights it scored with our safetensors writer to B.
3. Here, B is loaded into Olmo3ForCausalLM (its tensors must equal A's bit for bit) and every
   item is scored independently: ids = [eos] + tiktoken(context) + tiktoken(choice), sum of
   log_softmax over the choice tokens; acc / acc_len_norm / bpb / ce_loss recomputed from those;
   every exposure candidate scored the same way and the rank-based exposure recomputed.
Checks: identical token counts, chars and bytes per choice; the same chosen answer (acc and
len-norm argmax) on every item; per-choice log-likelihood rel. diff <= 1e-5; suite metrics within
1e-6; exposure ranks identical, candidate log-likelihoods within 1e-5 rel.; the reference secrets
are distinct, start with the controls and exclude every inserted secret.
Env: OLMO_BIN, OLMO_SOURCE_DIR, TIKTOKEN_CACHE_DIR; BENCH_PARITY_ITEMS (default 32 per suite);
BENCH_PARITY_MODEL=DIR scores that model (checkpoint, run dir or HF dir) instead of the random one.
Prints the figures (items compared, worst rel. diff, smallest top-2 margin). Exit 0 = pass.
"""
import glob
import hashlib
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
from safetensors.numpy import load_file
from transformers import Olmo3Config, Olmo3ForCausalLM

import olmo_test as ot
from olmo_test import check, finish

BIN = ot.bin_path()
SRC = os.environ.get("OLMO_SOURCE_DIR", ".")
N_ITEMS = int(os.environ.get("BENCH_PARITY_ITEMS", "32"))
EOS = 100257
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
# One thread on each side: the scores do not depend on it (the tolerances hold for any thread
# count) and OpenMP/torch thread pools spinning against each other on a shared 2-core machine
# cost minutes.
torch.set_num_threads(1)


def encoding():
    import tiktoken
    cache = os.environ.get("TIKTOKEN_CACHE_DIR", "")
    cached = os.path.join(cache, "9b5ad71b2ce5302211f9c61530b329a4922fc6a4")
    if not cache or not os.path.exists(cached):
        sys.exit(f"TIKTOKEN_CACHE_DIR must hold the cl100k rank file ({cached} missing)")
    with open(cached, "rb") as f:
        if hashlib.sha256(f.read()).hexdigest() != CL100K_SHA256:
            sys.exit(f"{cached} is not OpenAI's cl100k_base")
    return tiktoken.get_encoding("cl100k_base")


def make_model(path):
    torch.manual_seed(11)
    cfg = Olmo3Config(vocab_size=100352, hidden_size=64, intermediate_size=128,
                      num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                      sliding_window=16, max_position_embeddings=512, rms_norm_eps=1e-6,
                      pad_token_id=None, eos_token_id=None, bos_token_id=None,
                      attn_implementation="eager")
    assert cfg.layer_types == ["sliding_attention"] * 3 + ["full_attention"], cfg.layer_types
    m = Olmo3ForCausalLM(cfg).float()
    with torch.no_grad():
        for _, p in m.named_parameters():
            p.copy_(1.0 + 0.2 * torch.randn_like(p) if p.dim() == 1 else 0.1 * torch.randn_like(p))
    m.save_pretrained(path)


class Scorer:
    """Sum of log p(continuation | prefix) with HF, choices of one item batched (right padding:
    causal attention never looks at the padding after a position)."""

    def __init__(self, model_dir):
        self.m = Olmo3ForCausalLM.from_pretrained(model_dir, attn_implementation="eager",
                                                  torch_dtype=torch.float32).eval()

    def logliks(self, prefix, conts):
        seqs = [prefix + c for c in conts]
        L = max(len(s) for s in seqs) - 1
        ids = torch.full((len(seqs), L), EOS, dtype=torch.long)
        for b, s in enumerate(seqs):
            ids[b, :len(s) - 1] = torch.tensor(s[:-1])
        with torch.no_grad():
            logp = torch.log_softmax(self.m(input_ids=ids).logits.double(), dim=-1)
        out = []
        for b, (s, c) in enumerate(zip(seqs, conts)):
            first = len(s) - len(c) - 1
            out.append(float(sum(logp[b, first + i, t] for i, t in enumerate(c))))
        return out


def stripped(s):
    return s[1:] if s.startswith(" ") else s


def argmax(v):
    return max(range(len(v)), key=lambda i: (v[i], -i))


def synthetic_canaries(path):
    rng = np.random.default_rng(5)
    out = []
    for count in (0, 1, 4, 16, 64):
        for k in range(2):
            name = f"{count:02d}-{k}"
            secret = "".join(str(int(d)) for d in rng.integers(0, 10, 12))
            prefix = f"The secret code of canary {name} is"
            out.append({"name": name, "count": count, "secret": secret, "prefix": prefix,
                        "text": prefix + "".join(" " + d for d in secret)})
    with open(path, "w") as f:
        json.dump(out, f, indent=2)
    return out


def main():
    enc = encoding()
    suites = sorted(glob.glob(os.path.join(SRC, "evalsets", "*.jsonl")))
    if len(suites) < 2:
        sys.exit(f"expected >= 2 suites in {SRC}/evalsets, found {suites}")
    with tempfile.TemporaryDirectory(prefix="olmo_bench_parity_") as tmp:
        a, b = os.path.join(tmp, "hf_a"), os.path.join(tmp, "hf_b")
        if os.environ.get("BENCH_PARITY_MODEL"):  # e.g. a trained checkpoint, for the figures
            a = os.environ["BENCH_PARITY_MODEL"]
        else:
            make_model(a)
        canaries = synthetic_canaries(os.path.join(tmp, "canaries.json"))
        res = os.path.join(tmp, "res.jsonl")
        cmd = [BIN, "evaluate-suites", "--model", a, "--save-hf", b, "--max-items", str(N_ITEMS),
               "--canaries", os.path.join(tmp, "canaries.json"), "--candidates", "16",
               "--out", res, *suites]
        r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
        if r.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
        print(r.stdout, end="")
        recs = [json.loads(x) for x in open(res)]

        B = load_file(os.path.join(b, "model.safetensors"))
        if not os.environ.get("BENCH_PARITY_MODEL"):
            A = load_file(os.path.join(a, "model.safetensors"))
            check(set(A) == set(B) and
                  all(np.array_equal(A[k], B[k]) for k in A), "weights written by our writer == HF's", f"{len(B)} tensors")
        sc = Scorer(b)

        worst_rel, min_margin, n_items, n_choice = 0.0, math.inf, 0, 0
        for path in suites:
            label = os.path.basename(path)[:-len(".jsonl")]
            items = [json.loads(x) for x in open(path) if x.strip()][:N_ITEMS]
            ours = {x["id"]: x for x in recs if x["kind"] == "item" and x["suite"] == label}
            summ = [x for x in recs if x["kind"] == "benchmark" and x["suite"] == label][0]
            acc = accn = bpb = ce = 0.0
            same_pred = same_meta = 0
            for it in items:
                o = ours[it["id"]]
                prefix = [EOS] + enc.encode(it["context"], disallowed_special=())
                conts = [enc.encode(c, disallowed_special=()) for c in it["choices"]]
                ll = sc.logliks(prefix, conts)
                chars = [len(stripped(c)) for c in it["choices"]]
                nbytes = [len(stripped(c).encode("utf-8")) for c in it["choices"]]
                same_meta += (o["tokens"] == [len(c) for c in conts] and o["chars"] == chars
                              and o["bytes"] == nbytes)
                pred = argmax(ll)
                pred_n = argmax([x / max(1, n) for x, n in zip(ll, chars)])
                same_pred += o["pred"] == pred and o["pred_norm"] == pred_n
                for x, y in zip(o["ll"], ll):
                    worst_rel = max(worst_rel, abs(x - y) / abs(y))
                s = sorted(ll, reverse=True)
                min_margin = min(min_margin, s[0] - s[1])
                g = it["gold"]
                acc += pred == g
                accn += pred_n == g
                bpb += -ll[g] / max(1, nbytes[g]) / math.log(2)
                ce += -ll[g] / len(conts[g])
                n_choice += len(ll)
            n = len(items)
            n_items += n
            check(same_meta == n, f"{label}: tokens/chars/bytes per choice", f"{same_meta}/{n} items")
            check(same_pred == n, f"{label}: same choice (acc and len-norm)", f"{same_pred}/{n} items")
            for k, v in (("acc", acc / n), ("acc_len_norm", accn / n), ("bpb", bpb / n),
                         ("ce_loss", ce / n)):
                d = abs(summ[k] - v)
                check(d <= 1e-6 * max(1.0, abs(v)), f"{label}: {k}", f"ours {summ[k]:.6f} ref {v:.6f}")
        check(worst_rel <= 1e-5, "per-choice log-likelihood rel. diff",
              f"worst {worst_rel:.2e} over {n_choice} choices of {n_items} items (tol 1e-5); "
              f"smallest top-2 margin {min_margin:.3e} nats")

        # Exposure.
        cans = {c["name"]: c for c in canaries}
        inserted = {c["secret"] for c in canaries if c["count"] > 0}
        controls = [c["secret"] for c in canaries if c["count"] == 0]
        crecs = [x for x in recs if x["kind"] == "canary"]
        check(sorted(x["name"] for x in crecs) == sorted(cans), "every canary scored", f"{len(crecs)}")
        worst_e, same_rank = 0.0, 0
        for x in crecs:
            c = cans[x["name"]]
            refs = x["refs"]
            ok_refs = (len(refs) == 15 and len(set(refs)) == 15 and c["secret"] not in refs
                       and not (set(refs) & inserted)
                       and refs[:len(controls) - (c["count"] == 0)] == [s for s in controls if s != c["secret"]]
                       and all(len(s) == 12 and s.isdigit() for s in refs))
            check(ok_refs, f"canary {x['name']}: reference secrets", f"{len(refs)} refs")
            prefix = [EOS] + enc.encode(c["prefix"], disallowed_special=())
            cands = [c["secret"]] + refs
            conts = [enc.encode("".join(" " + d for d in s), disallowed_special=()) for s in cands]
            ll = sc.logliks(prefix, conts)
            for u, v in zip([x["ll"]] + x["ref_ll"], ll):
                worst_e = max(worst_e, abs(u - v) / abs(v))
            rank = 1 + sum(v > ll[0] for v in ll[1:])
            expo = math.log2(len(cands)) - math.log2(rank)
            same_rank += rank == x["rank"] and abs(expo - x["exposure"]) < 1e-12
        check(same_rank == len(crecs), "exposure ranks and values", f"{same_rank}/{len(crecs)} canaries")
        check(worst_e <= 1e-5, "exposure candidate log-likelihood rel. diff", f"worst {worst_e:.2e}")
    finish("benchmark parity")


if __name__ == "__main__":
    main()
