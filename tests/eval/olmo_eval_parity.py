"""Parity of `olmo evaluate` (src/eval/icl_metric.*, olmo_tasks.*) with the reference scorer itself:
ai2-olmo-eval 0.9.0's build_task + ICLMetric over transformers' Olmo3ForCausalLM on the same
weights, offline, CPU, fp32.

1. `olmo export --config tests/configs/tiny.yaml model.vocab_size=100352 data.seq_len=CTX --seed 5`
   writes a random-init OLMo 3 (4 layers, GQA, sliding window 16 on layers 0-2, the real dolma2
   padded vocab) and the dolma2 tokenizer.json to an HF dir.
2. `olmo evaluate --model HF --tasks TASKS --limit N --max-len CTX --out --docs-out` scores the N
   documents with the smallest doc_id of every task.
3. Here, each task is built by olmo_eval's build_task(label, HFTokenizer(tokenizer.json,
   pad 100277, eos 100257), model_ctx_len=CTX); its request loaders are wrapped so that only
   those N documents are read (MMLU: the first N test items of the category's first subject,
   which are doc_ids 0..N-1); every sample goes through ds.collate_fn and the HF model
   (Olmo3ForCausalLM, fp32) and ICLMetric(metric_type=ds.metric_type).update(batch, logits);
   .compute() gives the task metrics. Per-document predictions are recomputed from the metric's
   own per-continuation log-likelihood state (first argmax, as compute() does).
The tasks compared come from the reference, never from our output: a group name (fast, full)
is expanded by OLMo-core's TASK_GROUPS (olmo_core/eval/task_groups.py, the suite OLMo 3's
DownstreamEvaluator runs), each label must be in olmo_eval's task registry (LABEL_TO_TASK_MAP),
and every one is built and scored by the reference. A task, document or metric that one side
has and the other lacks fails; so does a task whose reference scores other than N documents.
The reference tokenizer is first checked against tiktoken's cl100k_base on every scored
context and continuation string. Checks per task: the same documents; every prediction equal;
accuracies equal; the same metric names; every other metric within 1e-5 relative (soft loss:
or 1e-9 absolute, see SOFT_ABS); every per-continuation log-likelihood within 1e-5 relative.
Env: OLMO_BIN, OLMO_SOURCE_DIR; OLMO_EVAL_PARITY_TASKS (default "fast"), OLMO_EVAL_PARITY_DOCS
(default 2), OLMO_EVAL_PARITY_CTX (default 1024). Exits 77 (skip) when data/olmo_eval or
olmo_eval is missing. Exit 0 = pass.
"""
import json
import os
import subprocess
import sys
import tempfile
import time
from functools import partial

import olmo_test
import olmo_test as ot
from olmo_test import finish, skip

SRC = os.environ.get("OLMO_SOURCE_DIR", ".")
BIN = ot.bin_path()
TASKS = os.environ.get("OLMO_EVAL_PARITY_TASKS", "fast")
N_DOCS = int(os.environ.get("OLMO_EVAL_PARITY_DOCS", "2"))
CTX = int(os.environ.get("OLMO_EVAL_PARITY_CTX", "1024"))
DATA = os.environ.get("OLMO_EVAL_DATA", os.path.join(SRC, "data", "olmo_eval"))
REL = 1e-5
# soft = softmax(ll)[gold] is a probability; with acc-type ll = S (tens of nats apart between
# choices) it can be ~1e-10, and its relative error is |S| x the fp32 error of S on both sides
# (e.g. 40 x 1e-6). Such values are also accepted within 1e-9 absolute.
SOFT_ABS = 1e-9

if not os.path.exists(os.path.join(DATA, "manifest.json")):
    skip(f"{DATA}/manifest.json missing (scripts/olmo_eval_data.py fetches it)")
try:
    import torch
    import olmo_eval.tasks as oe_tasks
    from olmo_core.eval.task_groups import TASK_GROUPS
    from olmo_eval import HFTokenizer, ICLMetric, build_task
    from transformers import Olmo3ForCausalLM
except ImportError as e:
    skip(f"{e} (scripts/install_deps.sh installs scripts/requirements-olmo-eval.txt)")

torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
check = partial(olmo_test.check, quiet=True)  # per-document checks: only the failures print


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-30)


def run(cmd):
    # Passive OpenMP waiting: on a shared, oversubscribed machine spinning threads cost 10x.
    env = dict(os.environ)
    env.setdefault("OMP_WAIT_POLICY", "passive")
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p.stdout


# Reference loaders restricted to the first N documents (the reference code runs unchanged on
# what they return).
_orig_hf, _orig_oe = oe_tasks.load_hf_dataset, oe_tasks.load_oe_eval_requests
_state = {"first_subject": None}


def _hf_subset(path, name, split):
    ds = _orig_hf(path, name, split)
    if split == "dev":
        return ds
    if _state["first_subject"] is None:
        _state["first_subject"] = name
    if name == _state["first_subject"]:
        return ds.select(range(min(N_DOCS, len(ds))))
    return ds.select([])


def _oe_subset(path, name=None, split=None):
    config, requests = _orig_oe(path, name, split)
    ids = sorted({r["doc_id"] for r in requests if r["doc_id"] < 1000000})[:N_DOCS]
    keep = set(ids)
    return config, [r for r in requests if r["doc_id"] in keep]


oe_tasks.load_hf_dataset, oe_tasks.load_oe_eval_requests = _hf_subset, _oe_subset


def tiktoken_check(labels, docs, tok):
    """The reference tokenizer (HFTokenizer over the tokenizer.json `olmo export` wrote) encodes
    every scored context and continuation as OpenAI's tiktoken cl100k_base does (an independent
    implementation; special-token strings as plain text, as olmo.cpp encodes them)."""
    import hashlib
    import tiktoken
    cached = os.path.join(os.environ.get("TIKTOKEN_CACHE_DIR", ""),
                          "9b5ad71b2ce5302211f9c61530b329a4922fc6a4")
    if not os.path.exists(cached):
        print(f"  (tiktoken cross-check skipped: {cached} missing)")
        return 0
    with open(cached, "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest() == (
            "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7")
    enc = tiktoken.get_encoding("cl100k_base")
    n = 0
    for label in labels:
        with open(os.path.join(DATA, f"{label}.jsonl"), encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                if r["doc_id"] not in docs[label]:
                    continue
                for text in (r["context"], r["continuation"]):
                    n += 1
                    a, b = enc.encode_ordinary(text), tok.encode(text, add_special_tokens=False)
                    check(a == b, f"{label} doc {r['doc_id']} tokens",
                          f"tiktoken and the reference tokenizer differ on {text[:60]!r}")
    return n


# ICLMetric.compute()'s keys -> the metric part of OLMo-core's logged name.
METRIC_NAMES = {"acc_v1": "accuracy", "acc_v2": "accuracy v2",
                "len_norm_v1": "length-normalized accuracy",
                "len_norm_v2": "length-normalized accuracy v2",
                "ce_loss_v1": "CE loss", "ce_loss_v2": "CE loss v2", "bpb_v1": "BPB",
                "bpb_v2": "BPB v2", "soft_v1": "soft loss", "soft_v2": "soft loss v2",
                "soft_log_v1": "log soft loss", "soft_log_v2": "log soft loss v2"}
PREFIX = "eval/downstream/"


def reference_labels(tasks):
    """The labels of TASKS (comma list of group names and labels) as the reference defines
    them: a group by OLMo-core's TASK_GROUPS, every label checked against olmo_eval's registry."""
    labels = []
    for item in tasks.split(","):
        labels += TASK_GROUPS[item] if item in TASK_GROUPS else [item]
    unknown = [l for l in labels if l not in oe_tasks.LABEL_TO_TASK_MAP]
    if unknown:
        sys.exit(f"FAIL: {unknown} not in olmo_eval's LABEL_TO_TASK_MAP")
    return list(dict.fromkeys(labels))


def reference(label, model, tok):
    _state["first_subject"] = None
    ds = build_task(label, tok, model_ctx_len=CTX)
    metric = ICLMetric(metric_type=ds.metric_type)
    with torch.no_grad():
        for sample in ds.samples:
            batch = ds.collate_fn([sample])
            logits = model(input_ids=batch["input_ids"]).logits
            metric.update(batch, logits)
    out = {k: float(v) for k, v in metric.compute().items()}
    # Per-document log-likelihoods and first-argmax predictions from the metric's own state.
    lls, labels = {}, {}
    for d, c, v in metric.loglikelihoods:
        lls.setdefault(d, {}).setdefault(c, v)
    for d, c, l in metric.labels:
        labels.setdefault(d, l)
    preds = {}
    for d, m in lls.items():
        t = torch.tensor([m[c] for c in range(len(m))])
        preds[d] = int(torch.argmax(t).item())
    return ds.metric_type, out, lls, preds, labels, len(ds.samples)


def main():
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        hf = os.path.join(tmp, "hf")
        run([BIN, "export", "--config", os.path.join(SRC, "tests", "configs", "tiny.yaml"),
             "model.vocab_size=100352", f"data.seq_len={CTX}", "--seed", "5", "--out", hf])
        out_json, docs_jsonl = os.path.join(tmp, "m.json"), os.path.join(tmp, "d.jsonl")
        t1 = time.time()
        table = run([BIN, "evaluate", "--model", hf, "--tasks", TASKS, "--limit", str(N_DOCS),
                     "--max-len", str(CTX), "--data", DATA, "--out", out_json,
                     "--docs-out", docs_jsonl])
        t_ours = time.time() - t1
        ours = json.load(open(out_json))
        docs = {}
        for line in open(docs_jsonl):
            r = json.loads(line)
            check(r["doc_id"] not in docs.get(r["task"], {}), f"{r['task']} doc {r['doc_id']} once",
                  "listed twice in --docs-out")
            docs.setdefault(r["task"], {})[r["doc_id"]] = r
        # The tasks: the reference's list, not ours; a task on one side only fails.
        labels = reference_labels(TASKS)
        ours_tasks = set(docs) | {k[len(PREFIX):k.rindex(" (")] for k in ours
                                  if k.startswith(PREFIX) and " (" in k}
        for label in labels:
            check(label in docs, f"{label} scored by ours", "no documents in --docs-out")
        check(ours_tasks <= set(labels), "no task beyond the reference's",
              f"ours also scored {sorted(ours_tasks - set(labels))}")
        check(all(k.startswith(PREFIX) for k in ours), "every --out key a downstream metric",
              f"{[k for k in ours if not k.startswith(PREFIX)]}")
        model = Olmo3ForCausalLM.from_pretrained(hf, torch_dtype=torch.float32).eval()
        tok = HFTokenizer(os.path.join(hf, "tokenizer.json"), pad_token_id=100277,
                          eos_token_id=100257)
        n_tok = tiktoken_check(labels, {l: docs.get(l, {}) for l in labels}, tok)
        t2 = time.time()
        n_metrics = n_docs = n_ll = 0
        worst = 0.0
        for label in labels:
            mtype, ref, lls, preds, golds, rows = reference(label, model, tok)
            mine = docs.get(label, {})
            check(len(lls) == N_DOCS, f"{label} reference documents",
                  f"the reference scored {len(lls)}, want --limit {N_DOCS}")
            check(sorted(mine) == sorted(lls), f"{label} docs",
                  f"ours {sorted(mine)} vs reference {sorted(lls)}")
            for d, r in mine.items():
                if d not in lls:
                    continue
                n_docs += 1
                check(r["label"] == golds[d], f"{label} doc {d} label", f"{r['label']} vs {golds[d]}")
                ref_ll = [lls[d][c] for c in range(len(lls[d]))]
                for a, b in zip(r["ll"], ref_ll):
                    n_ll += 1
                    worst = max(worst, rel(a, b))
                    check(rel(a, b) <= REL, f"{label} doc {d} ll", f"{a} vs {b}")
                check(len(r["ll"]) == len(ref_ll), f"{label} doc {d} choices",
                      f"{len(r['ll'])} vs {len(ref_ll)}")
                if mtype not in ("bpb", "ce_loss"):
                    check(r["pred"] == preds[d], f"{label} doc {d} prediction",
                          f"ours {r['pred']} vs reference {preds[d]} (ll {ref_ll} vs {r['ll']})")
            want = set()
            for key, v in ref.items():
                if key not in METRIC_NAMES:
                    check(False, f"{label} reference metric {key}", "no OLMo-core name known")
                    continue
                name = f"{PREFIX}{label} ({METRIC_NAMES[key]})"
                want.add(name)
                n_metrics += 1
                if name not in ours:
                    continue  # failed by the metric-name check below
                if key.startswith(("acc", "len_norm")):
                    check(ours[name] == v, name, f"ours {ours[name]} vs reference {v}")
                elif key.startswith("soft_v") and abs(ours[name] - v) <= SOFT_ABS:
                    pass  # a probability far below 1e-4: see SOFT_ABS
                else:
                    worst = max(worst, rel(ours[name], v))
                    check(rel(ours[name], v) <= REL, name, f"ours {ours[name]} vs reference {v}")
            have = {k for k in ours if k.startswith(f"{PREFIX}{label} (")}
            check(have == want, f"{label} metrics", f"ours only {sorted(have - want)}, "
                  f"reference only {sorted(want - have)}")
        t_ref = time.time() - t2
    print(table.rstrip())
    tokens = int(table.split("total: ")[1].split(" tasks, ")[1].split(" query tokens")[0])
    print(f"olmo_eval parity: {len(labels)} tasks ({TASKS}: from OLMo-core's TASK_GROUPS / "
          f"olmo_eval's registry), {n_docs} documents, {n_metrics} metrics, "
          f"{n_ll} log-likelihoods; worst rel. diff {worst:.2e} (limit {REL:g}); {n_tok} "
          f"strings tokenized as tiktoken does")
    print(f"wall: ours {t_ours:.1f}s ({tokens / t_ours:.0f} query tokens/s), reference "
          f"{t_ref:.1f}s ({tokens / t_ref:.0f} query tokens/s), x{t_ref / t_ours:.1f}; "
          f"{tokens} query tokens; test total {time.time() - t0:.1f}s")
    finish("olmo_eval parity")


if __name__ == "__main__":
    main()
