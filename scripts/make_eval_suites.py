#!/usr/bin/env python3
"""Builds the held-out benchmark suites in evalsets/ from the demo corpus (stdlib only).

Both suites come from text the model never trains on (`olmo corpus build` writes it to
data/corpus; see src/corpus/corpus.h):
  gcide_def     GCIDE headword -> definition, 4 choices: the entry's own first definition and
                3 first definitions of other entries of the same part of speech.
                Source: val_ood_gcide.jsonl (dictionary entries; training never sees GCIDE).
                context  'In the dictionary, the noun "abdomen" means'
                choice   ' the belly, or that part of the body between the thorax and the pelvis'
  heldout_cont  true next sentence vs 3 sentences of similar length from other held-out
                documents. Source: the prose documents (linux-doc, python-doc) of val_id.jsonl
                (the in-distribution held-out split: hash of the document id, never in train).
                context  up to 2 preceding sentences of the same document
                choice   ' ' + sentence
Each suite line: {"id", "context", "choices", "gold", "source"}. Selection, distractors and the
gold position are decided by sha256 of fixed strings (no RNG whose stream could change between
Python versions), so the same corpus gives the same bytes. evalsets/MANIFEST.json records the
item counts, each suite's sha256 and the sha256 of the corpus files used.
usage: scripts/make_eval_suites.py [--corpus data/corpus] [--out evalsets] [--items 300]
       [--check]   (regenerate in memory and compare with the files in --out; exit 1 if not equal)
       [--skip-missing]   (exit 77 when the corpus is not there: ctest reports a skip)
"""
import argparse
import hashlib
import json
import os
import re
import sys

CHOICES = 4
POS = {"n.": "noun", "a.": "adjective", "v. t.": "verb", "v. i.": "verb", "adv.": "adverb"}


def h(*parts):
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()


def sha256_file(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


# ---- GCIDE -----------------------------------------------------------------------------------

HEADER = re.compile(r"^([A-Z][A-Za-z'-]*(?: [A-Za-z'-]+)?) \\[^\\]*\\, (n\.|a\.|v\. t\.|v\. i\.|adv\.)"
                    r"(?=[ \n]|$)")


def skip_brackets(s, i):
    """s[i] == '[': index after the matching ']' (nested), or -1."""
    depth = 0
    for j in range(i, len(s)):
        depth += s[j] == "["
        depth -= s[j] == "]"
        if depth == 0:
            return j + 1
    return -1


def gcide_entries(docs):
    """(headword, pos, definition) for entries whose first sense is a short plain definition."""
    out = []
    for d in docs:
        lines = d["text"].split("\n")
        starts = [i for i, ln in enumerate(lines) if ln and not ln[0].isspace()]
        for k, i in enumerate(starts):
            end = starts[k + 1] if k + 1 < len(starts) else len(lines)
            m = HEADER.match(lines[i])
            if not m:
                continue
            word, pos = m.group(1), m.group(2)
            text = " ".join(ln.strip() for ln in lines[i:end])
            rest = text[m.end():].lstrip()
            if rest.startswith(";") or rest.startswith("pl."):
                continue  # plural forms etc. before the sense: irregular header
            while rest.startswith("["):  # etymology
                j = skip_brackets(rest, 0)
                if j < 0:
                    break
                rest = rest[j:].lstrip()
            while True:  # field labels: (Zool.) (Anat.) ...
                lm = re.match(r"^\([A-Z][A-Za-z. &]*\)\s*", rest)
                if not lm:
                    break
                rest = rest[lm.end():]
            rest = re.sub(r"^1\.\s*", "", rest)
            cut = re.search(r"[.;]|\[1913 Webster\]|--", rest)
            if not cut:
                continue
            dfn = rest[:cut.start()].strip()
            if any(c in dfn for c in "[]{}\\\"()") or not re.fullmatch(r"[A-Za-z][A-Za-z ,'-]*", dfn):
                continue
            words = dfn.split()
            if not 2 <= len(words) <= 16:
                continue
            dfn = dfn[0].lower() + dfn[1:]
            if word.lower() in dfn.lower():
                continue  # "Abdicator: one who abdicates" would be solvable by copying
            out.append((word, pos, dfn, d["id"]))
    return out


def gcide_suite(docs, n):
    entries = gcide_entries(docs)
    seen, uniq = set(), []
    for e in entries:
        if e[0].lower() not in seen:
            seen.add(e[0].lower())
            uniq.append(e)
    by_pos = {}
    for e in uniq:
        by_pos.setdefault(POS[e[1]], []).append(e)
    order = sorted(uniq, key=lambda e: h("gcide_def", e[0], e[1]))
    items = []
    for word, pos, dfn, src in order:
        if len(items) == n:
            break
        kind = POS[pos]
        pool = sorted((e for e in by_pos[kind] if e[0] != word and e[2] != dfn),
                      key=lambda e: h("gcide_def/distractor", word, e[0], e[1]))
        distractors, used = [], {dfn}
        for e in pool:
            if e[2] not in used:
                used.add(e[2])
                distractors.append(e[2])
            if len(distractors) == CHOICES - 1:
                break
        if len(distractors) < CHOICES - 1:
            continue
        gold = int(h("gcide_def/gold", word), 16) % CHOICES
        choices = distractors[:gold] + [dfn] + distractors[gold:]
        items.append({"id": f"gcide_def/{len(items):04d}",
                      "context": f'In the dictionary, the {kind} "{word.lower()}" means',
                      "choices": [" " + c for c in choices], "gold": gold,
                      "source": f"{src}#{word}"})
    return items, len(uniq)


# ---- held-out continuation ---------------------------------------------------------------------

SENT_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def paragraphs(text):
    """Prose paragraphs of an rst/txt document, each a list of sentences."""
    out, cur = [], []

    def flush():
        if cur:
            out.append(" ".join(cur))
        cur.clear()

    for ln in text.split("\n"):
        s = ln.strip()
        if not s:
            flush()
            continue
        # markup: section underlines, directives, field lists, tables, literal blocks, lists
        if (re.fullmatch(r"[=\-~^*+#`:.'\"_|]+", s) or s.startswith((".. ", ":", "|", "+-", "*", "-", "#"))
                or s.endswith("::") or ln.startswith(("\t", "    ")) or re.match(r"^\d+[.)] ", s)):
            flush()
            continue
        cur.append(s)
    flush()
    res = []
    for p in out:
        sents = [x.strip() for x in SENT_SPLIT.split(p)]
        res.append(sents)
    return res


def good_sentence(s):
    words = s.split()
    return (5 <= len(words) <= 40 and s[-1] in ".!?" and s[0].isupper() and "``" not in s
            and sum(c.isalpha() for c in s) >= 0.6 * len(s.replace(" ", "")))


def heldout_suite(docs, n, per_doc=25):
    prose = [d for d in docs if d["source"] in ("linux-doc", "python-doc")]
    cands, pool = [], []
    for d in prose:
        # the document's sentences in order; a context may reach back into the previous paragraph
        sents = [(pi, si, x) for pi, para in enumerate(paragraphs(d["text"]))
                 for si, x in enumerate(para)]
        for k, (pi, si, s) in enumerate(sents):
            if good_sentence(s):
                pool.append((d["id"], s))
                if k >= 1:
                    ctx = " ".join(x for _, _, x in sents[max(0, k - 2):k])
                    if len(ctx) > 400:
                        ctx = ctx[-400:].split(" ", 1)[-1]
                    if len(ctx.split()) >= 5:
                        cands.append((d["id"], pi, si, ctx, s))
    cands.sort(key=lambda c: h("heldout_cont", c[0], c[1], c[2]))
    items, taken = [], {}
    for doc, pi, si, ctx, s in cands:
        if len(items) == n:
            break
        if taken.get(doc, 0) >= per_doc:
            continue
        others = sorted((p for p in pool if p[0] != doc and p[1] != s
                         and 0.6 <= len(p[1]) / len(s) <= 1.6),
                        key=lambda p: h("heldout_cont/distractor", doc, pi, si, p[0], p[1]))
        distractors, used = [], {s}
        for p in others:
            if p[1] not in used:
                used.add(p[1])
                distractors.append(p[1])
            if len(distractors) == CHOICES - 1:
                break
        if len(distractors) < CHOICES - 1:
            continue
        taken[doc] = taken.get(doc, 0) + 1
        gold = int(h("heldout_cont/gold", doc, pi, si), 16) % CHOICES
        choices = distractors[:gold] + [s] + distractors[gold:]
        items.append({"id": f"heldout_cont/{len(items):04d}", "context": ctx,
                      "choices": [" " + c for c in choices], "gold": gold,
                      "source": f"{doc}#p{pi}s{si}"})
    return items, len(cands)


def dump(items):
    return "".join(json.dumps(it, ensure_ascii=False, sort_keys=True) + "\n" for it in items)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default="data/corpus")
    ap.add_argument("--out", default="evalsets")
    ap.add_argument("--items", type=int, default=300)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--skip-missing", action="store_true",
                    help="exit 77 (ctest: skipped) when the corpus is not built")
    a = ap.parse_args()
    gcide_path = os.path.join(a.corpus, "val_ood_gcide.jsonl")
    val_path = os.path.join(a.corpus, "val_id.jsonl")
    for p in (gcide_path, val_path):
        if not os.path.isfile(p):
            if a.skip_missing:
                print(f"SKIPPED: {p} not found (the demo corpus is not built)")
                sys.exit(77)
            sys.exit(f"{p}: not found (build the corpus first: make corpus)")
    g_items, g_pool = gcide_suite(read_jsonl(gcide_path), a.items)
    c_items, c_pool = heldout_suite(read_jsonl(val_path), a.items)
    texts = {"gcide_def": dump(g_items), "heldout_cont": dump(c_items)}
    manifest = {
        "generator": "scripts/make_eval_suites.py",
        "choices_per_item": CHOICES,
        "suites": {
            "gcide_def": {"file": "gcide_def.jsonl", "items": len(g_items),
                          "candidate_entries": g_pool, "source": "val_ood_gcide.jsonl",
                          "sha256": hashlib.sha256(texts["gcide_def"].encode()).hexdigest()},
            "heldout_cont": {"file": "heldout_cont.jsonl", "items": len(c_items),
                             "candidate_items": c_pool, "source": "val_id.jsonl (linux-doc, python-doc)",
                             "sha256": hashlib.sha256(texts["heldout_cont"].encode()).hexdigest()},
        },
        "corpus_files": {"val_ood_gcide.jsonl": sha256_file(gcide_path),
                         "val_id.jsonl": sha256_file(val_path)},
    }
    mtext = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    files = {"gcide_def.jsonl": texts["gcide_def"], "heldout_cont.jsonl": texts["heldout_cont"],
             "MANIFEST.json": mtext}
    if a.check:
        bad = [f for f, t in files.items()
               if not os.path.isfile(os.path.join(a.out, f))
               or open(os.path.join(a.out, f), encoding="utf-8").read() != t]
        if bad:
            sys.exit(f"make_eval_suites --check: {', '.join(bad)} in {a.out} differ from a fresh "
                     f"generation from {a.corpus}")
        print(f"make_eval_suites --check: {a.out} matches a fresh generation "
              f"({len(g_items)} + {len(c_items)} items)")
        return
    os.makedirs(a.out, exist_ok=True)
    for f, t in files.items():
        tmp = os.path.join(a.out, f + ".tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(t)
        os.replace(tmp, os.path.join(a.out, f))
    print(f"gcide_def: {len(g_items)} items (from {g_pool} usable entries); "
          f"heldout_cont: {len(c_items)} items (from {c_pool} candidates) -> {a.out}/")


if __name__ == "__main__":
    main()
