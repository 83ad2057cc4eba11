"""`olmo export` and `olmo generate` against Hugging Face transformers (eager, fp32, offline).

A demo-size OLMo 3 (configs/demo.yaml: d 256, 8 layers, window 64 on 3 of 4 layers, vocab 100352,
context 256) initialised with a seed is exported by `olmo export --config`, once as one
model.safetensors and once sharded (--max-shard-size 60MB), and loaded with
AutoModelForCausalLM / AutoTokenizer.from_pretrained(dir, local_files_only=True). Checks:
  1. files: index weight_map covers every tensor, shards > 1, every tensor bit-identical between
     the two exports (PyPI safetensors), both load in transformers;
  2. logits: `olmo logits` on the export vs transformers' forward, rel L2 <= 1e-5 per sequence
     (sequences longer than the window, up to the full context);
  3. tokenizer: AutoTokenizer on the exported tokenizer.json == tiktoken cl100k == `olmo
     tokenize` (ranks file and exported tokenizer.json) on edge cases and real text; decode
     round trip; the exported vocab/merges equal transformers' TikTokenConverter output;
  4. generation: greedy `olmo generate` (KV cache, three prompts of different lengths as one
     batch, generation crossing the sliding window) == transformers generate(do_sample=False)
     token for token, each prompt run alone in transformers; EOS stop at the same token;
  5. YaRN (faithful: full-attention layers only): the export carries rope_parameters and the
     legacy rope_scaling; logits and greedy generation equal transformers';
  6. bad input: prompt longer than the context, incomplete checkpoint, non-empty output dir.
Env: OLMO_BIN, OLMO_SOURCE_DIR, TIKTOKEN_CACHE_DIR. Exit code 0 = pass.
"""
import glob
import json
import os
import tempfile
import time

import numpy as np
import torch

from olmo_test import check, finish, olmo
from olmo_test.refs import load_hf

SRC = os.environ.get("OLMO_SOURCE_DIR", ".")
torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))


def rel_l2(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


def write_ids(path, seqs):
    with open(path, "w") as f:
        for s in seqs:
            f.write(" ".join(map(str, s)) + "\n")


def check_files(one, sharded):
    from safetensors.numpy import load_file
    idx = json.load(open(os.path.join(sharded, "model.safetensors.index.json")))
    shards = sorted(set(idx["weight_map"].values()))
    a = load_file(os.path.join(one, "model.safetensors"))
    b = {}
    for s in shards:
        b.update(load_file(os.path.join(sharded, s)))
    check(len(shards) > 1, "sharded export: several shards", f"{len(shards)} shards")
    check(set(idx["weight_map"]) == set(a) == set(b), "index weight_map covers every tensor",
          f"{len(a)} tensors")
    check(idx["metadata"]["total_size"] == sum(v.nbytes for v in a.values()), "index total_size")
    same = all(a[k].dtype == b[k].dtype and a[k].tobytes() == b[k].tobytes() for k in a)
    check(same, "single-file and sharded exports hold identical tensors")
    for f in ["config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"]:
        check(os.path.exists(os.path.join(one, f)), f"{f} written")


def check_logits(d, model, tmp):
    rng = np.random.default_rng(5)
    seqs = [rng.integers(0, 100278, n).tolist() for n in (256, 150, 37)]
    tf = os.path.join(tmp, "logit_tokens.txt")
    write_ids(tf, seqs)
    out = os.path.join(tmp, "ours.bin")
    olmo("logits", "--model", d, "--tokens", tf, "--out", out)
    ours = np.fromfile(out, dtype=np.float32)
    V = model.config.vocab_size
    off, worst, worst_abs = 0, 0.0, 0.0
    with torch.no_grad():
        for s in seqs:
            ref = model(input_ids=torch.tensor([s])).logits[0].numpy()
            mine = ours[off:off + len(s) * V].reshape(len(s), V)
            off += len(s) * V
            worst = max(worst, rel_l2(mine, ref))
            worst_abs = max(worst_abs, float(np.abs(mine - ref).max() / np.abs(ref).max()))
    check(worst <= 1e-5,
          "logits (ours on the export vs transformers), worst per-sequence rel L2 <= 1e-5", f"{worst:.2e} (max |diff| / max |logit| {worst_abs:.2e})")


def sample_texts():
    texts = ["Hello world", " Hello", "The Debian package manager", "line1\nline2\r\n\n end",
             "1234567890 3.14159 12,345", "emoji 😀👍🏽 flags 🇺🇸", "a\ufeffb \ufeff\ufeff\n",
             "   leading and trailing   ", "tabs\tand\u00a0nbsp\u3000ideographic", "don't I'LL we've",
             "<|endoftext|> as plain text", "Ünïcödé ñ 漢字 かな 한국어 العربية", ""]
    for path in sorted(glob.glob("/usr/share/common-licenses/*"))[:6]:
        try:
            texts.append(open(path, encoding="utf-8").read()[:20000])
        except (UnicodeDecodeError, OSError):
            pass
    return texts


def check_tokenizer(d, tmp):
    import tiktoken
    from transformers import AutoTokenizer
    from transformers.convert_slow_tokenizer import TikTokenConverter
    enc = tiktoken.get_encoding("cl100k_base")
    tk = AutoTokenizer.from_pretrained(d, local_files_only=True)
    check((tk.eos_token_id, tk.pad_token_id, tk.bos_token_id) ==
          (100257, 100277, None), "AutoTokenizer special ids", f"eos {tk.eos_token_id} pad {tk.pad_token_id} bos {tk.bos_token_id}")
    check(len(tk) == 100278, "AutoTokenizer vocabulary size", str(len(tk)))
    texts = sample_texts()
    want = [enc.encode(t, disallowed_special=()) for t in texts]
    hf = [tk(t, add_special_tokens=False, split_special_tokens=True).input_ids for t in texts]
    jl = os.path.join(tmp, "texts.jsonl")
    with open(jl, "w") as f:
        for t in texts:
            f.write(json.dumps({"text": t}) + "\n")

    def ours(extra):
        r = olmo("tokenize", "--jsonl", jl, *extra)
        return [[int(x) for x in l.split()] for l in r.stdout.split("\n")[:-1]]
    n_tok = sum(map(len, want))
    check(hf == want, "exported tokenizer (transformers) == tiktoken", f"{len(texts)} texts, {n_tok} tokens")
    check(ours([]) == hf, "olmo tokenize (ranks) == exported tokenizer (transformers)")
    check(ours(["--tokenizer", os.path.join(d, "tokenizer.json")]) == want,
          "olmo tokenize --tokenizer exported tokenizer.json == tiktoken")
    check(all(tk.decode(w) == t for w, t in zip(want, texts)), "exported tokenizer decode round trip")
    check(tk("a<|endoftext|>", add_special_tokens=False).input_ids == [64, 100257],
          "<|endoftext|> is the special token when not split")

    class Conv(TikTokenConverter):  # the converter on tiktoken's ranks: no network
        @staticmethod
        def load_tiktoken_bpe(url):
            return enc._mergeable_ranks
    ref = json.loads(Conv(vocab_file="cl100k_base").converted().to_str())["model"]
    mine = json.load(open(os.path.join(d, "tokenizer.json")))["model"]
    check(mine["vocab"] == ref["vocab"], "exported vocab == TikTokenConverter's")
    rm = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in ref["merges"]]
    check([tuple(m) for m in mine["merges"]] == rm,
          "exported merges == TikTokenConverter's (same order)", f"{len(mine['merges'])} merges")


def hf_greedy(model, prompt, n, eos):
    with torch.no_grad():
        out = model.generate(input_ids=torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                             max_new_tokens=n, do_sample=False, eos_token_id=eos, pad_token_id=100277)
    return out[0, len(prompt):].tolist()


def ours_generate(d, prompts, n, tmp, extra=()):
    f = os.path.join(tmp, "prompts.txt")
    write_ids(f, prompts)
    r = olmo("generate", d, "--prompt-ids", f, "--tokens", str(n), "--json", *extra)
    return [json.loads(l) for l in r.stdout.split("\n") if l.strip()]


def check_generate(d, model, tmp):
    rng = np.random.default_rng(9)
    prompts = [rng.integers(0, 100278, n).tolist() for n in (5, 40, 90)]
    N = 48
    mine = ours_generate(d, prompts, N, tmp, ["--eos", "-1"])
    model.generation_config.eos_token_id = None
    for i, p in enumerate(prompts):
        ref = hf_greedy(model, p, N, None)
        got = mine[i]["ids"]
        k = next((j for j in range(min(len(got), len(ref))) if got[j] != ref[j]), None)
        check(got == ref,
              f"greedy prompt {i} ({len(p)} tokens, batch of 3) == transformers generate, {N} tokens", "token for token" if got == ref else f"first difference at {k}: {got[k:k+4]} vs {ref[k:k+4]}")
    # EOS: pick a token greedy emits at index >= 3 as the stop id; both must stop right after it.
    ref0 = hf_greedy(model, prompts[0], N, None)
    eos = ref0[3]
    stop = ref0.index(eos)
    hf_stop = hf_greedy(model, prompts[0], N, eos)
    got = ours_generate(d, prompts[:1], N, tmp, ["--eos", str(eos)])[0]
    check(got["ids"] == hf_stop == ref0[:stop + 1] and got["finish"] == "eos", "stop at EOS like transformers",
          f"stopped after {len(got['ids'])} tokens (transformers {len(hf_stop)}), finish {got['finish']}")


def check_yarn(tmp):
    d = os.path.join(tmp, "hf_yarn")
    olmo("export", "--config", os.path.join(SRC, "configs", "demo.yaml"), "model.yarn_factor=8",
         "model.yarn_old_context_len=32", "--seed", "4", "--no-tokenizer", "--out", d)
    cfg = json.load(open(os.path.join(d, "config.json")))
    rs = cfg["rope_scaling"]
    check(rs["rope_type"] == "yarn" and rs["factor"] == 8 and rs["original_max_position_embeddings"] == 32
          and cfg["rope_parameters"]["full_attention"]["rope_type"] == "yarn"
          and cfg["rope_parameters"]["sliding_attention"]["rope_type"] == "default",
          "YaRN export: rope_scaling and rope_parameters", json.dumps(rs))
    model = load_hf(d)
    s = np.random.default_rng(2).integers(0, 100278, 200).tolist()
    tf, out = os.path.join(tmp, "yarn_tokens.txt"), os.path.join(tmp, "yarn.bin")
    write_ids(tf, [s])
    olmo("logits", "--model", d, "--tokens", tf, "--out", out)
    ours = np.fromfile(out, dtype=np.float32).reshape(len(s), -1)
    with torch.no_grad():
        ref = model(input_ids=torch.tensor([s])).logits[0].numpy()
    e = rel_l2(ours, ref)
    check(e <= 1e-5, "YaRN logits vs transformers rel L2 <= 1e-5", f"{e:.2e}")
    model.generation_config.eos_token_id = None
    got = ours_generate(d, [s[:30]], 60, tmp, ["--eos", "-1"])[0]["ids"]
    check(got == hf_greedy(model, s[:30], 60, None), "YaRN greedy generation == transformers, 60 tokens")


def check_bad_input(d, tmp):
    f = os.path.join(tmp, "long.txt")
    write_ids(f, [list(range(1000, 1300))])
    r = olmo("generate", d, "--prompt-ids", f, want=1)
    check("prompt 0 has 300 tokens but the model's context is 256 tokens" in r.stderr,
          "prompt longer than the context: clear error", r.stderr.strip())
    ck = os.path.join(tmp, "run", "step5")
    os.makedirs(ck)
    open(os.path.join(ck, "index.json"), "w").write("{}")
    r = olmo("export", ck, "--out", os.path.join(tmp, "x"), want=1)
    check("incomplete checkpoint (no COMMITTED marker" in r.stderr
          and ck in r.stderr, "incomplete checkpoint: clear error", r.stderr.strip())
    r = olmo("export", os.path.join(tmp, "run"), "--out", os.path.join(tmp, "x"), want=1)
    check("neither a checkpoint" in r.stderr, "run dir without a complete checkpoint: clear error",
          r.stderr.strip())
    r = olmo("export", "--config", os.path.join(SRC, "configs", "demo.yaml"), "--out", d, want=1)
    check("is not empty" in r.stderr, "non-empty output dir refused", r.stderr.strip())


T0 = time.time()


def section(name):
    print(f"{name} (t={time.time() - T0:.0f}s)", flush=True)


def main():
    with tempfile.TemporaryDirectory(prefix="olmo_export_") as tmp:
        cfg = os.path.join(SRC, "configs", "demo.yaml")
        one, sharded = os.path.join(tmp, "hf"), os.path.join(tmp, "hf_sharded")
        olmo("export", "--config", cfg, "--seed", "3", "--out", one)
        olmo("export", "--config", cfg, "--seed", "3", "--out", sharded, "--max-shard-size", "60MB")
        section("files")
        check_files(one, sharded)
        model = load_hf(one)
        check(load_hf(sharded) is not None, "sharded export loads in transformers")
        section("logits")
        check_logits(one, model, tmp)
        section("tokenizer")
        check_tokenizer(one, tmp)
        section("generate")
        check_generate(one, model, tmp)
        section("yarn")
        check_yarn(tmp)
        section("bad input")
        check_bad_input(one, tmp)
    section("done")
    finish("export/generate parity")


if __name__ == "__main__":
    main()
