"""Shared helpers of the monitoring tests (tensorboard_test.py, wandb_sync_test.py): the
scalars a run's metrics.jsonl should show in TensorBoard / W&B, derived here from the records
independently of the C++ writer (src/train/metrics_log.cpp) and of tools/wandb_sync.py.

The tag rule (README "Monitoring"): alarm -> "alarm/<source>/<cause>" = 1; eval / benchmark /
downstream -> "<kind>/<set|suite|task>/<field>"; other kinds -> "<kind>/<field>"; numbers and
booleans only, nested objects flattened with '/', a field name holding '/' is the tag itself;
"info" / "profile" records, "step", "time", "batch_hash", strings, arrays and nulls not shown.
"""
import os

import olmo_test as ot
from olmo_test import tiny_data as td

DISCRIMINATOR = {"eval": "set", "benchmark": "suite", "downstream": "task"}
SKIPPED_KINDS = {"info", "profile"}


def records(run_dir):
    return ot.read_metrics(run_dir, None)


def _fields(prefix, obj, top, out):
    for k, v in obj.items():
        if top and k in ("kind", "step", "time", "batch_hash"):
            continue
        tag = k if "/" in k else f"{prefix}/{k}"
        if isinstance(v, bool):
            out.append((tag, 1.0 if v else 0.0))
        elif isinstance(v, (int, float)):
            out.append((tag, float(v)))
        elif isinstance(v, dict):
            _fields(tag, v, False, out)


def scalars_of(rec):
    """[(tag, value)] of one metrics record (values as JSON doubles)."""
    kind = rec.get("kind")
    if not kind or kind in SKIPPED_KINDS or not isinstance(rec.get("step"), int):
        return []
    if kind == "alarm":
        return [(f"alarm/{rec['source']}/{rec['cause']}", 1.0)]
    prefix, fields = kind, dict(rec)
    d = DISCRIMINATOR.get(kind)
    if d and isinstance(rec.get(d), str):
        prefix += "/" + fields.pop(d)
    out = []
    _fields(prefix, fields, True, out)
    return out


def expected(run_dir):
    """tag -> sorted [(step, value, time)] over metrics.jsonl's records."""
    out = {}
    for r in records(run_dir):
        for tag, v in scalars_of(r):
            out.setdefault(tag, []).append((r["step"], v, r["time"]))
    return {t: sorted(v) for t, v in out.items()}


def train_args(tmp):
    """`olmo train` arguments of the monitoring tests' tiny run: 20 steps, held-out eval and
    validation every 5 steps (records of kinds train, eval, validation, info)."""
    d = td.make_data(os.path.join(tmp, "data"), train_tokens=64 * 8 * 60)
    return [td.tiny_config(), f"data.mix={d['mix']}", f"eval.sets.val={d['val']}",
            "eval.interval=5", "validation.interval=5", "trainer.threads=1"]


# An injected data fault from step 5: audit alarms in metrics.jsonl.
AUDIT_FAULT = ["allow_fault_injection=true", "data.inject_fault=repeat_batch",
               "data.fault_start_step=5", "data.fault_every=100"]
