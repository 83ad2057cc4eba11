#!/usr/bin/env python3
"""Parity of olmo's dolma2 tokenizer (`olmo tokenize`) with independent references.

Default run (the ctest `data_tokenizer_parity`):
  1. PyPI tiktoken's cl100k_base, loaded offline from TIKTOKEN_CACHE_DIR, must be OpenAI's file
     (same sha256 as data/tokenizer/cl100k_base.tiktoken);
  2. golden vectors (data_sources.md section 2), a hand-written edge-case set, 1500 random
     strings over tricky code points, and ~400 KB of real text (Python stdlib, /usr/share/doc):
     our ids == tiktoken.encode(text, disallowed_special=());
  3. decode round trip: our decode of tiktoken's ids == text, and of our own ids == text;
  4. HF tokenizer.json: cl100k converted with transformers' TikTokenConverter plus the 22
     dolma2 specials (ids 100256..100277), loaded by our loader: ids == PyPI `tokenizers`
     (encode_special_tokens=True) == tiktoken; and the same json with tiktoken's current regex
     (possessive form) == tiktoken;
  5. CLI bad input: bad ids, bad JSONL, broken/missing tokenizer files -> exit 1, file:line.

Corpus mode:  tokenizer_parity.py --jsonl FILE [FILE...]
  checks every document ("text" of each JSONL line; .jsonl, .jsonl.gz, .jsonl.zst) against
  tiktoken, prints documents/tokens checked, exits 1 on any mismatch.
Environment: OLMO_BIN (path of build/olmo), OLMO_SOURCE_DIR, TIKTOKEN_CACHE_DIR.
"""
import argparse
import glob
import gzip
import hashlib
import json
import os
import random
import subprocess
import tempfile

from olmo_test import check, finish

SRC = os.environ.get("OLMO_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
OLMO_BIN = os.environ.get("OLMO_BIN", os.path.join(SRC, "build", "olmo"))
RANKS = os.path.join(SRC, "data", "tokenizer", "cl100k_base.tiktoken")
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
DOLMA2_SPECIALS = (["<|extra_id_0|>", "<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>",
                    "<|fim_suffix|>", "|||PHONE_NUMBER|||", "|||EMAIL_ADDRESS|||",
                    "|||IP_ADDRESS|||", "<|im_start|>", "<|im_end|>"] +
                   [f"<|extra_id_{i}|>" for i in range(1, 11)] + ["<|endofprompt|>", "<|pad|>"])

GOLDEN = [
    ("Hello world", [9906, 1917]),
    ("hello world", [15339, 1917]),
    (" Hello", [22691]),
    ("The quick brown fox jumps over the lazy dog.",
     [791, 4062, 14198, 39935, 35308, 927, 279, 16053, 5679, 13]),
    ("   leading spaces and trailing   ", [256, 6522, 12908, 323, 28848, 262]),
    ("line1\nline2\r\nline3\n\n\nend", [1074, 16, 198, 1074, 17, 319, 1074, 18, 1432, 408]),
    ("1234567890 3.14159 1e10 12,345",
     [4513, 10961, 16474, 15, 220, 18, 13, 9335, 2946, 220, 16, 68, 605, 220, 717, 11, 12901]),
    ("emoji 😀👍🏽 👨‍👩‍👧‍👦 flags 🇺🇸",
     [38623, 91416, 9468, 239, 235, 9468, 237, 121, 62904, 101, 378, 235, 9468, 239, 102, 378,
      235, 9468, 239, 100, 378, 235, 9468, 239, 99, 8202, 11410, 229, 118, 9468, 229, 116]),
    ("a\ufeffb \ufeff\ufeff\n\ufeff", [64, 3305, 65, 76880, 62619, 3305]),
    ("<|endoftext|>", [27, 91, 8862, 728, 428, 91, 29]),
]

def run(args, input_bytes=None):
    return subprocess.run([OLMO_BIN] + args, input=input_bytes, capture_output=True)


def write_jsonl(texts, path):
    with open(path, "w", encoding="utf-8") as f:
        for t in texts:
            f.write(json.dumps({"text": t}) + "\n")


def olmo_encode_file(path, tokenizer=None):
    args = ["tokenize", "--jsonl", path] + (["--tokenizer", tokenizer] if tokenizer else [])
    r = run(args)
    if r.returncode != 0:
        raise RuntimeError(f"olmo {' '.join(args)} failed: {r.stderr.decode()}")
    return [[int(x) for x in line.split()] for line in r.stdout.decode().split("\n")[:-1]]


def olmo_encode(texts, tmp, tokenizer=None):
    p = os.path.join(tmp, "texts.jsonl")
    write_jsonl(texts, p)
    return olmo_encode_file(p, tokenizer)


def olmo_decode(id_lists, tmp):
    p = os.path.join(tmp, "ids.txt")
    with open(p, "w") as f:
        for ids in id_lists:
            f.write(" ".join(map(str, ids)) + "\n")
    r = run(["tokenize", "--decode", "--jsonl", p])
    if r.returncode != 0:
        raise RuntimeError(f"olmo tokenize --decode failed: {r.stderr.decode()}")
    return [json.loads(line)["text"] for line in r.stdout.decode().split("\n")[:-1]]


def compare(name, texts, got, want, want_name="tiktoken"):
    if len(got) != len(want):
        check(False, f"{name}: {len(got)} results for {len(want)} texts")
        return
    bad = [i for i in range(len(texts)) if got[i] != want[i]]
    for i in bad[:5]:
        g, w = got[i], want[i]
        k = next((j for j in range(min(len(g), len(w))) if g[j] != w[j]), min(len(g), len(w)))
        check(False, f"{name}: text {i} {texts[i][:80]!r}: first difference at token {k}: "
                     f"ours {g[max(0, k - 3):k + 4]} vs {want_name} {w[max(0, k - 3):k + 4]}")
    n_tok = sum(len(w) for w in want)
    print(f"{name}: {len(texts) - len(bad)}/{len(texts)} texts equal ({n_tok} tokens, "
          f"{sum(len(t.encode()) for t in texts)} bytes)", flush=True)


def edge_cases():
    spaces = ["\u00a0", "\u1680", "\u2000", "\u2003", "\u2009", "\u200a", "\u2028", "\u2029",
              "\u202f", "\u205f", "\u3000", "\u0085", "\u000b", "\u000c", "\u180e", "\u200b",
              "\ufeff", "\u001c", "\u001f"]
    cases = [
        "", " ", "  ", "\n", "\r\n", "\r", "\t", "\t\t x", " \n ", "a  \n  ", "x   y",
        "    \n\n\n    ", "a\n\n\n\n\n\nb", "\r\r\n\n\r", "trailing \n", "trailing  \n  \n ",
        "tabs\tand\t\tmore\t", "  \t \t\n\t  ", "end with spaces   ", "   ",
        "He'S I'M you'll WE'RE they'VE it'D She'LL don't DON'T o'clock ''s 's 'S",
        "'ſ 'K 'ſt", "rock'n'roll 'tis '", "I’m curly ’s", "1 12 123 1234 12345 123456 1234567",
        "3.14159265358979 -0.5e-10 0x1F 1,000,000 ١٢٣٤ １２３４ ²³ Ⅻ ½",
        "café naïve résumé Ångström e\u0301 n\u0303 crème brûlée Straße İstanbul",
        "中文字符测试，标点。日本語のテキスト 한국어 텍스트", "Привет, мир! Ελληνικά العربية עברית हिन्दी",
        "👨‍👩‍👧‍👦 👩🏽‍💻 🏳️‍🌈 ❤️ 🇺🇸🇬🇧 👍🏽👍🏿 😀😀😀",
        "<|endoftext|> <|pad|> <|fim_prefix|>x<|fim_suffix|> |||PHONE_NUMBER|||",
        "def f(x):\n    return x ** 2  # comment\n\n\nclass A:\n\tpass\n",
        "if (a && b) { c->d[0] = e >> 2; } // ok\r\n",
        "a" * 1000, " " * 1000, "\n" * 500, "ab" * 700, "1" * 999, "😀" * 300, "é" * 400,
        "-" * 333 + "=" * 333, ("x " * 500), "\t" * 100 + "z",
        "\x00\x01\x7f control", "mixed\u00a0nbsp and\u3000ideographic",
    ]
    for s in spaces:
        cases += [f"a{s}b", f"a {s} b", f"{s}{s}x", f"x{s}\n", f"word{s}", f"{s}", f"1{s}2",
                  f"a{s}{s}{s}", f"a\n{s}b", f"{s} {s}"]
    return cases


def random_strings(n, seed=1):
    pool = ("abzAZ09 \n\r\t'sSdDmMtTlLvVrRe.,;:!?-_()[]{}<|>/\\\"#@$%^&*+=~`" +
            "\u00a0\u0085\u2003\u3000\u2028\ufeff\u180e\u200b\u200d\u001c" +
            "éüßſ\u0301\u0303中文한😀🏽🇺ЖاअΩ٣１½")
    rng = random.Random(seed)
    return ["".join(rng.choice(pool) for _ in range(rng.randint(1, 60))) for _ in range(n)]


def real_text(limit=400_000):
    """~400 KB of real text: every 7th stdlib .py file (250 KB), then package copyright files."""
    docs = []

    def take(files, budget):
        n = 0
        for f in files:
            try:
                with open(f, encoding="utf-8") as fh:
                    t = fh.read()
            except (UnicodeDecodeError, OSError):
                continue
            docs.append(t)
            n += len(t.encode())
            if n >= budget:
                return

    py = sorted(f for f in glob.glob("/usr/lib/python3.11/**/*.py", recursive=True)
                if "/test" not in f and "site-packages" not in f)
    take(py[::7], limit * 5 // 8)
    take(sorted(glob.glob("/usr/share/doc/*/copyright")), limit * 3 // 8)
    return docs


def tiktoken_encoding():
    import tiktoken
    cache = os.environ.get("TIKTOKEN_CACHE_DIR", "")
    cached = os.path.join(cache, "9b5ad71b2ce5302211f9c61530b329a4922fc6a4")
    if not cache or not os.path.exists(cached):
        raise SystemExit(f"TIKTOKEN_CACHE_DIR must hold the cl100k rank file ({cached} missing)")
    with open(cached, "rb") as f:
        h = hashlib.sha256(f.read()).hexdigest()
    if h != CL100K_SHA256:
        raise SystemExit(f"{cached}: sha256 {h} is not OpenAI's {CL100K_SHA256}")
    return tiktoken.get_encoding("cl100k_base")


def build_hf_json(enc, path, pattern=None):
    """cl100k -> tokenizer.json with transformers' converter, dolma2 specials at 100256.."""
    from tokenizers import AddedToken
    from transformers.convert_slow_tokenizer import TikTokenConverter

    class Conv(TikTokenConverter):  # use the oracle's ranks; no network, no cache writes
        @staticmethod
        def load_tiktoken_bpe(url):
            return enc._mergeable_ranks

    kw = {"pattern": pattern} if pattern else {}
    tk = Conv(vocab_file="cl100k_base", **kw).converted()
    tk.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in DOLMA2_SPECIALS])
    assert tk.token_to_id("<|endoftext|>") == 100257, tk.token_to_id("<|endoftext|>")
    assert tk.token_to_id("<|pad|>") == 100277, tk.token_to_id("<|pad|>")
    tk.save(path)
    return tk


def check_cli_errors(tmp):
    def expect(args, parts, name, input_bytes=None):
        r = run(args, input_bytes)
        err = r.stderr.decode()
        if r.returncode != 1 or not all(p in err for p in parts):
            check(False, f"cli {name}: rc {r.returncode}, stderr {err!r}, wanted {parts}")
    p = os.path.join(tmp, "bad_ids.txt")
    with open(p, "w") as f:
        f.write("9906 1917\n1 2 100278\n")
    expect(["tokenize", "--decode", p], [f"{p}:2:", "100278"], "id >= vocab")
    with open(p, "w") as f:
        f.write("9906 abc\n")
    expect(["tokenize", "--decode", p], [f"{p}:1:", "'abc'"], "non-numeric id")
    p = os.path.join(tmp, "bad.jsonl")
    with open(p, "w") as f:
        f.write('{"text": "ok"}\n{"text": "broken\n')
    expect(["tokenize", "--jsonl", p], [f"{p}:2:", "JSON"], "malformed JSONL")
    bad_tok = os.path.join(tmp, "broken.tiktoken")
    with open(RANKS) as f:
        lines = f.readlines()[:50]
    lines[41] = "@@notbase64@@ 41\n"
    with open(bad_tok, "w") as f:
        f.writelines(lines)
    expect(["tokenize", "--tokenizer", bad_tok, p], [f"{bad_tok}:42:", "base64"], "broken rank file")
    os.makedirs(os.path.join(tmp, "w"), exist_ok=True)
    wrong = os.path.join(tmp, "w", "cl100k_base.tiktoken")
    with open(RANKS, "rb") as f:
        data = bytearray(f.read())
    data[-3] ^= 1
    with open(wrong, "wb") as f:
        f.write(data)
    expect(["tokenize", "--tokenizer", wrong, p], [wrong, "sha256"], "wrong hash")
    expect(["tokenize", "--tokenizer", os.path.join(tmp, "nope.tiktoken"), p],
           ["nope.tiktoken", "not found"], "missing tokenizer")
    print("cli bad-input checks done", flush=True)


def default_suite():
    enc = tiktoken_encoding()
    tt = lambda texts: [enc.encode(t, disallowed_special=()) for t in texts]
    with tempfile.TemporaryDirectory() as tmp:
        # 1-2. golden vectors: the oracle first, then ours.
        texts = [t for t, _ in GOLDEN]
        compare("golden (tiktoken vs data_sources.md)", texts, tt(texts), [v for _, v in GOLDEN],
                "golden")
        ours = olmo_encode(texts, tmp)
        compare("golden (ours vs data_sources.md)", texts, ours, [v for _, v in GOLDEN], "golden")
        sets = {"edge cases": edge_cases(), "random strings": random_strings(1500),
                "real text": real_text()}
        all_texts = []
        for name, texts in sets.items():
            ours = olmo_encode(texts, tmp)
            want = tt(texts)
            compare(name, texts, ours, want)
            # 3. decode round trips
            for label, ids in (("tiktoken ids", want), ("our ids", ours)):
                dec = olmo_decode(ids, tmp)
                bad = [i for i in range(len(texts)) if dec[i] != texts[i]]
                if bad:
                    check(False, f"{name}: decode({label}) != text for {len(bad)} texts, e.g. {texts[bad[0]][:60]!r}")
            all_texts += texts
        # 4. HF tokenizer.json
        hf_path = os.path.join(tmp, "tokenizer.json")
        tk = build_hf_json(enc, hf_path)
        tk.encode_special_tokens = True
        hf = [e.ids for e in tk.encode_batch(all_texts, add_special_tokens=False)]
        want = tt(all_texts)
        compare("HF tokenizers vs tiktoken (oracles agree)", all_texts, hf, want)
        ours = olmo_encode(all_texts, tmp, tokenizer=hf_path)
        compare("ours on tokenizer.json vs HF tokenizers", all_texts, ours, hf, "tokenizers")
        compare("ours on tokenizer.json vs tiktoken", all_texts, ours, want)
        with open(hf_path) as f:
            j = json.load(f)
        j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = enc._pat_str
        hf2 = os.path.join(tmp, "tokenizer_current_regex.json")
        with open(hf2, "w") as f:
            json.dump(j, f)
        ours = olmo_encode(all_texts, tmp, tokenizer=hf2)
        compare("ours on tokenizer.json with tiktoken's current regex vs tiktoken", all_texts,
                ours, want)
        # 5. CLI errors
        check_cli_errors(tmp)


def read_jsonl_texts(path):
    if path.endswith(".gz"):
        raw = gzip.open(path, "rb").read()
    elif path.endswith(".zst"):
        raw = subprocess.run(["zstd", "-dc", path], check=True, capture_output=True).stdout
    else:
        raw = open(path, "rb").read()
    lines = [l for l in raw.decode("utf-8").split("\n") if l.strip()]
    return [json.loads(l)["text"] for l in lines]


def corpus_suite(files):
    enc = tiktoken_encoding()
    total_docs = total_tokens = 0
    with tempfile.TemporaryDirectory() as tmp:
        for path in files:
            texts = read_jsonl_texts(path)
            if path.endswith((".gz", ".zst")):
                plain = os.path.join(tmp, "plain.jsonl")
                write_jsonl(texts, plain)
                ours = olmo_encode_file(plain)
            else:
                ours = olmo_encode_file(path)
            want = enc.encode_ordinary_batch(texts, num_threads=os.cpu_count() or 1)
            compare(path, texts, ours, want)
            total_docs += len(texts)
            total_tokens += sum(map(len, want))
    print(f"corpus: {total_docs} documents, {total_tokens} tokens (without EOS) checked")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jsonl", nargs="+", metavar="FILE", help="check every document of these files")
    a = ap.parse_args()
    if not os.path.exists(OLMO_BIN):
        raise SystemExit(f"{OLMO_BIN} not found (set OLMO_BIN)")
    if a.jsonl:
        corpus_suite(a.jsonl)
    else:
        default_suite()
    finish("tokenizer parity")


if __name__ == "__main__":
    main()
