"""The reference scorer (ai2-olmo-eval 0.9.0 build_task + ICLMetric over transformers'
Olmo3ForCausalLM, fp32, batch of 1) on the whole "fast" set, resumable, and its comparison with
`olmo evaluate` on every document it has scored so far.

The reference needs ~6.6 h of 2 cores for the 72k rows of the fast set, longer than one sitting,
so it runs in chunks whose results are cached on disk and survive being killed at any moment:

  CACHE/<key>/model/                the fixed model (`olmo export --config tests/configs/tiny.yaml
                                    model.vocab_size=100352 data.seq_len=CTX --seed 5`)
  CACHE/<key>/meta.json             sha256 of model.safetensors and tokenizer.json, the command
  CACHE/<key>/<label>/<a>-<b>.json  one chunk: the doc_ids it covers, ICLMetric's raw state for
                                    them (every (doc_id, cont_id, value) entry), rows, query
                                    tokens, seconds
  key = ctx<CTX>-<first 16 hex of sha256(model.safetensors)>

Each chunk file is written to a temporary name, fsync'ed and renamed, so a chunk is either
entirely there or absent. Every run re-exports the model and checks its sha256 against the key
(the seed and config regenerate bit-identical weights; a mismatch stops the run rather than mixing
two models in one cache). Within a task documents are scored in ascending doc_id order, so the
covered set is always the task's K smallest doc_ids, which `olmo evaluate --limit K` scores.
The next chunk goes to the task with the smallest covered fraction, so coverage grows evenly.

How a chunk is built: build_task(label, ...) runs unchanged, with its request loaders wrapped to
return only the chunk's documents (OE-eval tasks: the requests of those doc_ids; MMLU: those
positions of the concatenated subject test splits, whose positions are MMLU's doc_ids; the dev
split, which gives the shots, is untouched). MMLU's subset doc_ids are mapped back to the full
task's. Every sample goes through ds.collate_fn([sample]), the model, ICLMetric.update.

The record (checked in, so the work of earlier sessions is kept on a fresh machine):
  bench/results/olmo_eval_ref/<key>/meta.json, docs.json   as in the cache
  bench/results/olmo_eval_ref/<key>/<label>.jsonl.gz       every chunk of that task, one JSON per line
`pack` moves the cache's chunks into the record (rewritten to a temporary name and renamed);
`run`, `compare` and `status` read the record and the cache together, and refuse a document that
two chunks cover. A run on a fresh machine therefore only scores documents the record lacks.

Commands:
  pack     [--ctx 2048] [--cache DIR]   merge the cache's chunks into the record
  run      [--tasks fast] [--ctx 2048] [--threads 2] [--chunk-tokens 40000] [--cache DIR]
           [--max-docs N]   scores every document not in the cache yet, then exits
  compare  [--tasks fast] [--ctx 2048] [--cache DIR] [--threads 2] [--md FILE]
           Re-exports the model (hash check), then per task: the reference metrics over the
           covered documents (ICLMetric.compute() on the cached state), ours from
           `olmo evaluate --tasks LABEL --limit K` (K = covered docs); checks every document's
           label, choice count, per-continuation log-likelihood (1e-5 rel.) and prediction, every
           accuracy equal and every other metric within 1e-5 rel. (soft loss: or 1e-9 abs.);
           prints coverage (docs done / total) and both sides' seconds and query tokens/s on
           the covered part. Exit 0 = every covered document and metric agrees.
  status   coverage only.
Env: OLMO_BIN (default build/olmo), OLMO_EVAL_DATA (default data/olmo_eval).
Test switch: OLMO_TEST_KILL=chunk:N makes `run` SIGKILL itself inside the write of its N-th chunk
(the temporary file written and fsync'ed, not renamed): a kill at a named point, so
tests/eval/olmo_eval_ref_resume.py needs no timing.
"""
import argparse
import glob
import gzip
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("OLMO_BIN", os.path.join(ROOT, "build", "olmo"))
DATA = os.environ.get("OLMO_EVAL_DATA", os.path.join(ROOT, "data", "olmo_eval"))
REL = 1e-5
SOFT_ABS = 1e-9  # see tests/eval/olmo_eval_parity.py: soft loss far below 1e-4
STATES = ("loglikelihoods", "celosses", "bpbs", "labels", "loglikelihoods_no_leading_space",
          "celosses_no_leading_space", "bpbs_no_leading_space")
NAMES = {"acc_v1": "accuracy", "acc_v2": "accuracy v2",
         "len_norm_v1": "length-normalized accuracy", "len_norm_v2": "length-normalized accuracy v2",
         "ce_loss_v1": "CE loss", "ce_loss_v2": "CE loss v2", "bpb_v1": "BPB", "bpb_v2": "BPB v2",
         "soft_v1": "soft loss", "soft_v2": "soft loss v2", "soft_log_v1": "log soft loss",
         "soft_log_v2": "log soft loss v2"}


def sh(cmd, env=None):
    e = dict(os.environ)
    e.pop("OLMO_TEST_KILL", None)  # this script's switch, not the olmo binary's
    e.setdefault("OMP_WAIT_POLICY", "passive")
    e.update(env or {})
    p = subprocess.run(cmd, capture_output=True, text=True, env=e)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p.stdout


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_atomic(path, text, kill=False):
    """path holds text or is left as it was; kill: SIGKILL this process before the rename (the
    OLMO_TEST_KILL hook of `run`)."""
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    if kill:
        os.kill(os.getpid(), signal.SIGKILL)
    os.replace(tmp, path)
    dfd = os.open(os.path.dirname(path), os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def export_cmd(ctx, out):
    return [BIN, "export", "--config", os.path.join(ROOT, "tests", "configs", "tiny.yaml"),
            "model.vocab_size=100352", f"data.seq_len={ctx}", "--seed", "5", "--out", out]


def model_dir(cache, ctx):
    """Exports the fixed model afresh and returns (key dir, model dir); the key is its hash, so a
    regenerated model that differs by one bit lands in another directory (and is reported)."""
    os.makedirs(cache, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="export.", dir=cache)
    sh(export_cmd(ctx, os.path.join(tmp, "model")))
    st = sha256(os.path.join(tmp, "model", "model.safetensors"))
    tj = sha256(os.path.join(tmp, "model", "tokenizer.json"))
    key = os.path.join(cache, f"ctx{ctx}-{st[:16]}")
    meta = os.path.join(key, "meta.json")
    rec_meta = os.path.join(RECORD, os.path.basename(key), "meta.json")
    if os.path.exists(rec_meta):
        m = json.load(open(rec_meta))
        if m["model_sha256"] != st or m["tokenizer_sha256"] != tj:
            sys.exit(f"{rec_meta}: recorded hashes {m['model_sha256']}/{m['tokenizer_sha256']} "
                     f"differ from the re-exported model's {st}/{tj}")
    if os.path.exists(meta):
        m = json.load(open(meta))
        if m["model_sha256"] != st or m["tokenizer_sha256"] != tj:
            sys.exit(f"{meta}: cached hashes {m['model_sha256']}/{m['tokenizer_sha256']} differ "
                     f"from the re-exported model's {st}/{tj}")
        sh(["rm", "-rf", tmp])
    else:
        others = [d for d in glob.glob(os.path.join(cache, f"ctx{ctx}-*")) if d != key]
        if others:
            print(f"note: the re-exported model ({st[:16]}) is not the one cached in {others}: "
                  "the export is no longer bit-identical; starting a new cache", flush=True)
        os.makedirs(key, exist_ok=True)
        sh(["rm", "-rf", os.path.join(key, "model")])  # a start killed before its meta.json
        os.replace(os.path.join(tmp, "model"), os.path.join(key, "model"))
        sh(["rm", "-rf", tmp])
        write_atomic(meta, json.dumps({
            "model_sha256": st, "tokenizer_sha256": tj, "ctx": ctx,
            "export": " ".join(export_cmd(ctx, "DIR")).replace(ROOT + "/", ""),
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, indent=1) + "\n")
    print(f"model {key}/model: model.safetensors sha256 {st} (re-exported, equal to the key)",
          flush=True)
    return key, os.path.join(key, "model")


# ---- the reference's loaders, restricted to a chosen set of documents ---------------------------
class Subset:
    """Wraps olmo_eval.tasks' two loaders. want=None: record every document, return none
    (enumeration). want=sorted doc_ids: return only those documents."""

    def __init__(self, oe_tasks):
        self.t = oe_tasks
        self.orig_hf, self.orig_oe = oe_tasks.load_hf_dataset, oe_tasks.load_oe_eval_requests
        oe_tasks.load_hf_dataset, oe_tasks.load_oe_eval_requests = self.hf, self.oe
        self.want, self.seen, self.offset, self.oe_calls, self.hf_used = None, [], 0, 0, False

    def start(self, want):
        self.want, self.seen, self.offset, self.oe_calls, self.hf_used = want, [], 0, 0, False

    def hf(self, path, name, split):
        ds = self.orig_hf(path, name, split)
        if split == "dev":
            return ds
        self.hf_used = True
        lo, n = self.offset, len(ds)
        self.offset += n
        if self.want is None:
            self.seen.extend(range(lo, lo + n))
            return ds.select([])
        return ds.select([d - lo for d in self.want if lo <= d < lo + n])

    def oe(self, path, name=None, split=None):
        config, requests = self.orig_oe(path, name, split)
        self.oe_calls += 1
        if self.oe_calls > 1:
            sys.exit(f"{path}/{name}: more than one request file (doc_id offsets not handled)")
        if self.want is None:
            self.seen.extend(sorted({r["doc_id"] for r in requests if r["doc_id"] < 1000000}))
            return config, []
        keep = set(self.want)
        return config, [r for r in requests if r["doc_id"] in keep]


def build(label, tok, ctx, sub, want):
    from olmo_eval import build_task
    sub.start(want)
    ds = build_task(label, tok, model_ctx_len=ctx)
    if want is None:
        return ds, sorted(set(sub.seen))
    if sub.hf_used:  # MMLU numbers the subset 0..k-1 in concatenation order: map back
        for s in ds.samples:
            s["doc_id"] = want[s["doc_id"]]
    got = sorted({int(s["doc_id"]) for s in ds.samples})
    if got != list(want):
        sys.exit(f"{label}: subset build gave doc_ids {got[:5]}... for {want[:5]}...")
    return ds, want


RECORD = os.path.join(ROOT, "bench", "results", "olmo_eval_ref")


def record_path(key, label):
    return os.path.join(RECORD, os.path.basename(key), f"{label}.jsonl.gz")


def load_record(key, label):
    """The checked-in chunks of one task ([] when the record has none)."""
    p = record_path(key, label)
    if not os.path.exists(p):
        return []
    chunks = []
    try:
        with gzip.open(p, "rt", encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                try:
                    chunks.append(json.loads(line))
                except ValueError as e:
                    sys.exit(f"{p}:{n}: malformed chunk line ({e})")
    except (OSError, EOFError) as e:
        sys.exit(f"{p}: unreadable record ({e}); restore it with git checkout")
    return chunks


def load_chunks(key, label):
    """The record's chunks and the cache's, each document in at most one of them."""
    chunks = load_record(key, label)
    for p in sorted(glob.glob(os.path.join(key, label, "*.json"))):
        try:
            chunks.append(json.load(open(p)))
        except (OSError, ValueError) as e:
            sys.exit(f"{p}: unreadable chunk ({e}); chunks are renamed into place, so this file "
                     "was damaged after writing: delete it and rerun")
    seen = set()
    for c in chunks:
        if seen.intersection(c["docs"]):
            sys.exit(f"{label}: a document is covered by two chunks (record "
                     f"{record_path(key, label)} and cache {os.path.join(key, label)}): "
                     "delete the cache's copy")
        seen.update(c["docs"])
    return chunks


def labels_of(spec):
    manifest = json.load(open(os.path.join(DATA, "manifest.json")))
    sets = manifest["groups"]
    return sets[spec] if spec in sets else spec.split(",")


def reference_setup(threads):
    import torch
    import olmo_eval.tasks as oe_tasks
    torch.set_num_threads(threads)
    return Subset(oe_tasks)


def totals(key, labels, sub, tok, ctx):
    """doc_ids of every task, from the reference's own loaders (cached in key/docs.json)."""
    path = os.path.join(key, "docs.json")
    rec = os.path.join(RECORD, os.path.basename(key), "docs.json")
    have = json.load(open(path)) if os.path.exists(path) else {}
    if not have and os.path.exists(rec):
        have = json.load(open(rec))
    if any(l not in have for l in labels):
        for l in labels:
            if l not in have:
                have[l] = build(l, tok, ctx, sub, None)[1]
        write_atomic(path, json.dumps(have) + "\n")
    return {l: have[l] for l in labels}


def kill_chunk():
    """N of OLMO_TEST_KILL=chunk:N, else 0."""
    spec = os.environ.get("OLMO_TEST_KILL", "")
    if not spec:
        return 0
    k, _, n = spec.partition(":")
    if k != "chunk" or not n.isdigit() or int(n) < 1:
        sys.exit(f"OLMO_TEST_KILL = '{spec}': expected chunk:N with N >= 1 (the write of this "
                 "run's N-th chunk)")
    return int(n)


def cmd_run(a):
    kill_at, written = kill_chunk(), 0
    import torch
    from olmo_eval import HFTokenizer, ICLMetric
    from transformers import Olmo3ForCausalLM
    key, mdir = model_dir(a.cache, a.ctx)
    for stale in glob.glob(os.path.join(key, "*", "*.tmp*")):
        os.remove(stale)  # a chunk interrupted before its rename
    sub = reference_setup(a.threads)
    tok = HFTokenizer(os.path.join(mdir, "tokenizer.json"), pad_token_id=100277,
                      eos_token_id=100257)
    model = Olmo3ForCausalLM.from_pretrained(mdir, torch_dtype=torch.float32).eval()
    labels = labels_of(a.tasks)
    all_docs = totals(key, labels, sub, tok, a.ctx)
    if a.max_docs:
        all_docs = {l: v[:a.max_docs] for l, v in all_docs.items()}
    done = {l: {d for c in load_chunks(key, l) for d in c["docs"]} for l in labels}
    tok_per_doc = {}
    while True:
        left = [l for l in labels if len(done[l]) < len(all_docs[l])]
        if not left:
            print("all documents scored", flush=True)
            return
        label = min(left, key=lambda l: (len(done[l]) / len(all_docs[l]), labels.index(l)))
        todo = [d for d in all_docs[label] if d not in done[label]]
        n = max(1, min(len(todo), int(a.chunk_tokens / tok_per_doc.get(label, 2000))))
        want = todo[:n]
        t0 = time.time()
        ds, _ = build(label, tok, a.ctx, sub, want)
        t1 = time.time()
        metric = ICLMetric(metric_type=ds.metric_type)
        qtok = 0
        with torch.no_grad():
            for sample in ds.samples:
                batch = ds.collate_fn([sample])
                metric.update(batch, model(input_ids=batch["input_ids"]).logits)
                qtok += len(sample["query"])
        sec, model_sec = time.time() - t0, time.time() - t1
        tok_per_doc[label] = max(1, qtok / n)
        os.makedirs(os.path.join(key, label), exist_ok=True)
        chunk = {"label": label, "metric_type": ds.metric_type, "ctx": a.ctx, "docs": want,
                 "rows": len(ds.samples), "query_tokens": qtok, "seconds": round(sec, 3),
                 "model_seconds": round(model_sec, 3),
                 "threads": a.threads,
                 "state": {s: [list(e) for e in getattr(metric, s)] for s in STATES}}
        written += 1
        write_atomic(os.path.join(key, label, f"{want[0]:06d}-{want[-1]:06d}.json"),
                     json.dumps(chunk) + "\n", kill=written == kill_at)
        done[label].update(want)
        print(f"{time.strftime('%H:%M:%S')} {label}: docs {want[0]}-{want[-1]} ({n}), "
              f"{len(ds.samples)} rows, {qtok} query tokens, {sec:.1f} s ({model_sec:.1f} s model); covered "
              f"{len(done[label])}/{len(all_docs[label])}", flush=True)


def coverage(key, labels):
    path = os.path.join(key, "docs.json")
    if not os.path.exists(path):
        path = os.path.join(RECORD, os.path.basename(key), "docs.json")
    all_docs = json.load(open(path))
    rows = []
    for l in labels:
        chunks = load_chunks(key, l)
        docs = sorted(d for c in chunks for d in c["docs"])
        if len(docs) != len(set(docs)):
            sys.exit(f"{key}/{l}: a document is in two chunks")
        rows.append((l, chunks, docs, all_docs[l]))
    return rows


def cmd_pack(a):
    """Cache chunks -> record (per task, atomically); the cache's copies are removed after."""
    keys = sorted(glob.glob(os.path.join(a.cache, f"ctx{a.ctx}-*")))
    if not keys:
        sys.exit(f"{a.cache}: no ctx{a.ctx} cache to pack")
    for key in keys:
        out = os.path.join(RECORD, os.path.basename(key))
        os.makedirs(out, exist_ok=True)
        for name in ("meta.json", "docs.json"):
            if os.path.exists(os.path.join(key, name)):
                write_atomic(os.path.join(out, name), open(os.path.join(key, name)).read())
        for d in sorted(glob.glob(os.path.join(key, "*", ""))):
            label = os.path.basename(os.path.dirname(d))
            files = sorted(glob.glob(os.path.join(d, "*.json")))
            if label == "model" or not files:
                continue
            chunks = load_chunks(key, label)  # record + cache, checked disjoint
            chunks.sort(key=lambda c: c["docs"][0])
            p = record_path(key, label)
            tmp = f"{p}.tmp{os.getpid()}"
            with gzip.open(tmp, "wt", encoding="utf-8", compresslevel=9) as f:
                for c in chunks:
                    f.write(json.dumps(c) + "\n")
            with open(tmp, "rb") as f:
                os.fsync(f.fileno())
            os.replace(tmp, p)
            for q in files:
                os.remove(q)
            print(f"{label}: {sum(len(c['docs']) for c in chunks)} documents in {p}")


def cmd_status(a):
    keys = sorted(set(glob.glob(os.path.join(a.cache, f"ctx{a.ctx}-*")))
                  | {os.path.join(a.cache, os.path.basename(k))
                     for k in glob.glob(os.path.join(RECORD, f"ctx{a.ctx}-*"))})
    if not keys:
        sys.exit(f"{a.cache}: no ctx{a.ctx} cache yet (run `bench/olmo_eval_ref.py run`)")
    for key in keys:
        rows = coverage(key, labels_of(a.tasks))
        d = sum(len(r[2]) for r in rows)
        t = sum(len(r[3]) for r in rows)
        print(f"{key}: {d}/{t} documents ({100 * d / t:.1f}%)")
        for l, chunks, docs, alld in rows:
            print(f"  {l:44s} {len(docs):5d}/{len(alld):5d}")


def cmd_compare(a):
    import torch
    from olmo_eval import ICLMetric
    key, mdir = model_dir(a.cache, a.ctx)
    labels = labels_of(a.tasks)
    rows = coverage(key, labels)
    failures, lines = [], []

    def check(what, ok, detail=""):
        if not ok:
            failures.append(f"{what}: {detail}")
            if len(failures) <= 30:
                print(f"  FAIL {what}: {detail}", flush=True)

    def rel(x, y):
        return abs(x - y) / max(abs(y), 1e-30)

    tot = {"docs": 0, "all": 0, "ll": 0, "metrics": 0, "ref_s": 0.0, "ours_s": 0.0,
           "ref_model_s": 0.0, "ours_wall": 0.0, "tokens": 0, "ref_tokens": 0}
    worst_all = 0.0
    hdr = (f"{'task':44s} {'docs':>11s} {'metric':>8s} {'reference':>10s} {'ours':>10s} "
           f"{'worst rel':>9s} {'ref s':>8s} {'ours s':>7s}")
    print(hdr, flush=True)
    lines.append(hdr)
    with tempfile.TemporaryDirectory() as tmp:
        for label, chunks, docs, alld in rows:
            tot["all"] += len(alld)
            if not docs:
                line = f"{label:44s} {0:5d}/{len(alld):5d}  (not reached yet)"
                print(line, flush=True)
                lines.append(line)
                continue
            check(f"{label} covered set", docs == alld[:len(docs)],
                  "not the task's smallest doc_ids")
            metric = ICLMetric(metric_type=chunks[0]["metric_type"])
            for c in chunks:
                for s in STATES:
                    getattr(metric, s).extend(tuple(e) for e in c["state"][s])
            ref = {k: float(v) for k, v in metric.compute().items()}
            lls, golds = {}, {}
            for d, c, v in metric.loglikelihoods:
                lls.setdefault(d, {}).setdefault(c, v)
            for d, c, g in metric.labels:
                golds.setdefault(d, g)
            out, dj = os.path.join(tmp, "m.json"), os.path.join(tmp, "d.jsonl")
            t0 = time.time()
            table = sh([BIN, "evaluate", "--model", mdir, "--tasks", label, "--limit",
                        str(len(docs)), "--max-len", str(a.ctx), "--data", DATA, "--out", out,
                        "--docs-out", dj], env={"OMP_NUM_THREADS": str(a.threads)})
            ours_wall = time.time() - t0
            row = [l for l in table.splitlines() if l.startswith(label + " ")][0].split()
            ours_s, ours_tokens = float(row[-1]), int(row[-2])
            ours = json.load(open(out))
            mine = {}
            for line in open(dj):
                r = json.loads(line)
                mine[r["doc_id"]] = r
            check(f"{label} docs", sorted(mine) == sorted(lls), "document sets differ")
            worst = 0.0
            mtype = chunks[0]["metric_type"]
            for d, r in mine.items():
                if d not in lls:
                    continue
                ref_ll = [lls[d][c] for c in range(len(lls[d]))]
                check(f"{label} doc {d} label", r["label"] == golds[d], f"{r['label']} vs {golds[d]}")
                check(f"{label} doc {d} choices", len(r["ll"]) == len(ref_ll),
                      f"{len(r['ll'])} vs {len(ref_ll)}")
                for x, y in zip(r["ll"], ref_ll):
                    tot["ll"] += 1
                    worst = max(worst, rel(x, y))
                    check(f"{label} doc {d} ll", rel(x, y) <= REL, f"{x} vs {y}")
                if mtype not in ("bpb", "ce_loss"):
                    t = torch.tensor(ref_ll)
                    check(f"{label} doc {d} prediction", r["pred"] == int(torch.argmax(t)),
                          f"ours {r['pred']} vs reference {int(torch.argmax(t))}")
            for k, v in ref.items():
                name = f"eval/downstream/{label} ({NAMES[k]})"
                tot["metrics"] += 1
                if name not in ours:
                    check(name, False, "missing from ours")
                elif k.startswith(("acc", "len_norm")):
                    check(name, ours[name] == v, f"ours {ours[name]} vs reference {v}")
                elif not (k.startswith("soft_v") and abs(ours[name] - v) <= SOFT_ABS):
                    worst = max(worst, rel(ours[name], v))
                    check(name, rel(ours[name], v) <= REL, f"ours {ours[name]} vs reference {v}")
            worst_all = max(worst_all, worst)
            pk = {"bpb": "bpb_v2", "ce_loss": "ce_loss_v2", "len_norm": "len_norm_v1"}.get(
                mtype, "acc_v1")
            ref_s = sum(c["seconds"] for c in chunks)
            tot["ref_model_s"] += sum(c.get("model_seconds", c["seconds"]) for c in chunks)
            tot["ours_wall"] += ours_wall
            ref_tokens = sum(c["query_tokens"] for c in chunks)
            check(f"{label} query tokens", ref_tokens == ours_tokens,
                  f"reference {ref_tokens} vs ours {ours_tokens}")
            tot["docs"] += len(docs)
            tot["ref_s"] += ref_s
            tot["ours_s"] += ours_s
            tot["tokens"] += ours_tokens
            tot["ref_tokens"] += ref_tokens
            line = (f"{label:44s} {len(docs):5d}/{len(alld):5d} {NAMES[pk][:8]:>8s} "
                    f"{ref[pk]:10.5f} {ours[f'eval/downstream/{label} ({NAMES[pk]})']:10.5f} "
                    f"{worst:9.2e} {ref_s:8.1f} {ours_s:7.2f}")
            print(line, flush=True)
            lines.append(line)
    summary = [
        f"covered: {tot['docs']}/{tot['all']} documents ({100 * tot['docs'] / tot['all']:.1f}%), "
        f"{tot['tokens']} query tokens; {tot['ll']} log-likelihoods and {tot['metrics']} metrics "
        f"compared; worst rel. diff {worst_all:.2e} (limit {REL:g})",
        f"time on the covered part, task build + scoring: reference {tot['ref_s']:.0f} s "
        f"({tot['ref_tokens'] / max(tot['ref_s'], 1e-9):.0f} query tokens/s), ours (olmo "
        f"evaluate wall per task, model load included) {tot['ours_wall']:.1f} s "
        f"({tot['tokens'] / max(tot['ours_wall'], 1e-9):.0f} query tokens/s), "
        f"x{tot['ref_s'] / max(tot['ours_wall'], 1e-9):.1f}",
        f"scoring only: reference (model + ICLMetric.update) {tot['ref_model_s']:.0f} s "
        f"({tot['ref_tokens'] / max(tot['ref_model_s'], 1e-9):.0f} query tokens/s), ours "
        f"{tot['ours_s']:.1f} s ({tot['tokens'] / max(tot['ours_s'], 1e-9):.0f} query tokens/s), "
        f"x{tot['ref_model_s'] / max(tot['ours_s'], 1e-9):.1f}",
        "(the two sides ran at different times, each on 2 shared cores: the reference at "
        "nice 19 in the background, possibly over several sessions)",
        "FAILED: %d checks" % len(failures) if failures else "PASS"]
    for s in summary:
        print(s, flush=True)
    if a.md:
        with open(a.md, "w") as f:
            f.write("\n".join(lines + summary) + "\n")
    sys.exit(1 if failures else 0)


def main():
    global RECORD
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("command", choices=["run", "compare", "status", "pack"])
    p.add_argument("--tasks", default="fast")
    p.add_argument("--ctx", type=int, default=2048)
    p.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", "2")))
    p.add_argument("--chunk-tokens", type=int, default=40000,
                   help="query tokens per chunk (about a minute of the reference on 2 cores)")
    p.add_argument("--cache", default=os.path.join(ROOT, "data", "olmo_eval_ref_cache"))
    p.add_argument("--max-docs", type=int, default=0,
                   help="run: stop each task after its N smallest doc_ids (0 = all)")
    p.add_argument("--md", help="compare: also write the table to this file")
    p.add_argument("--record", default=RECORD,
                   help="the checked-in record of finished chunks (default bench/results/olmo_eval_ref)")
    a = p.parse_args()
    RECORD = os.path.abspath(a.record)
    if not os.path.exists(os.path.join(DATA, "manifest.json")):
        sys.exit(f"{DATA}/manifest.json missing (run .venv/bin/python scripts/olmo_eval_data.py)")
    {"run": cmd_run, "compare": cmd_compare, "status": cmd_status, "pack": cmd_pack}[a.command](a)


if __name__ == "__main__":
    main()
