#!/usr/bin/env python3
"""Decode speed: `olmo generate` (KV cache) against transformers generate() on the same exported
model, the same prompt, the same thread count, in one run (alternating, best of --reps each).

Model: exported here with `olmo export --config` (random init, seed 1): the demo size
(configs/demo.yaml, 58M parameters) and/or olmo3-190m (preset, context 1024). Both sides run
greedy decoding with EOS disabled for exactly --new tokens after a --prompt-token prompt.
  ours: OMP_NUM_THREADS=T build/olmo generate DIR --prompt-ids F --tokens N --eos -1; decode
        tokens/s = (N - 1) / decode time as printed by olmo (the prefill and the first token,
        which comes from the prefill, are excluded).
  peer: transformers AutoModelForCausalLM (fp32, eager attention, its default DynamicCache with
        sliding-window layers), torch.set_num_threads(T), torch.inference_mode(); decode time =
        time(generate N tokens) - time(generate 1 token), so its prefill is excluded the same way.
Also checks that both produce the same tokens. Usage:
  bench/decode_bench.py [--models demo,190m] [--threads 2] [--prompt-tokens 32] [--new 128]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def export(bin_, tmp, which):
    out = os.path.join(tmp, which)
    if which == "demo":
        cfg = os.path.join(SRC, "configs", "demo.yaml")
    else:
        cfg = os.path.join(tmp, "b190.yaml")
        with open(cfg, "w") as f:
            f.write("name: bench\nmodel:\n  preset: olmo3-190m\ndata:\n  seq_len: 1024\n")
    subprocess.run([bin_, "export", "--config", cfg, "--seed", "1", "--out", out], check=True,
                   capture_output=True)
    return out


def ours(bin_, d, prompt, n, threads, tmp):
    f = os.path.join(tmp, "prompt.txt")
    with open(f, "w") as fh:
        fh.write(" ".join(map(str, prompt)) + "\n")
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    r = subprocess.run([bin_, "generate", d, "--prompt-ids", f, "--tokens", str(n), "--eos", "-1",
                        "--json"], capture_output=True, text=True, env=env, check=True)
    m = re.search(r"decode: (\d+) tokens in \d+ steps, ([0-9.]+) s", r.stderr)
    ids = json.loads(r.stdout.strip().split("\n")[0])["ids"]
    return int(m.group(1)) / float(m.group(2)), ids


def peer(model, prompt, n):
    import torch
    x = torch.tensor([prompt])
    mask = torch.ones_like(x)
    kw = dict(do_sample=False, eos_token_id=None, pad_token_id=100277)
    with torch.inference_mode():
        t0 = time.perf_counter()
        model.generate(input_ids=x, attention_mask=mask, max_new_tokens=1, **kw)
        t1 = time.perf_counter()
        out = model.generate(input_ids=x, attention_mask=mask, max_new_tokens=n, min_new_tokens=n, **kw)
        t2 = time.perf_counter()
    return (n - 1) / ((t2 - t1) - (t1 - t0)), out[0, len(prompt):].tolist()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="demo,190m")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt-tokens", type=int, default=32)
    ap.add_argument("--new", type=int, default=128)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--bin", default=os.environ.get("OLMO_BIN", os.path.join(SRC, "build", "olmo")))
    a = ap.parse_args()
    import torch
    import transformers
    from transformers import AutoModelForCausalLM
    torch.set_num_threads(a.threads)
    prompt = np.random.default_rng(0).integers(0, 100278, a.prompt_tokens).tolist()
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, threads "
          f"{a.threads}, prompt {a.prompt_tokens} tokens, {a.new} new tokens, greedy, best of {a.reps}")
    with tempfile.TemporaryDirectory(prefix="olmo_decode_bench_") as tmp:
        for which in a.models.split(","):
            d = export(a.bin, tmp, which)
            model = AutoModelForCausalLM.from_pretrained(d, local_files_only=True, dtype=torch.float32,
                                                         attn_implementation="eager").eval()
            model.generation_config.eos_token_id = None
            peer(model, prompt, 4)  # warm-up
            best_o, best_p, same = 0.0, 0.0, True
            for _ in range(a.reps):  # alternate, so both see the same host noise
                o, ids_o = ours(a.bin, d, prompt, a.new, a.threads, tmp)
                p, ids_p = peer(model, prompt, a.new)
                best_o, best_p = max(best_o, o), max(best_p, p)
                same = same and ids_o == ids_p
            n = sum(p.numel() for p in model.parameters())
            print(f"{which} ({n / 1e6:.1f}M params): ours {best_o:.1f} tokens/s, transformers "
                  f"{best_p:.1f} tokens/s, ratio {best_o / best_p:.2f}x, same tokens: {same}",
                  flush=True)
            del model
    return 0


if __name__ == "__main__":
    sys.exit(main())
