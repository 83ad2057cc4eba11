#!/usr/bin/env python3
"""Turns an olmo.cpp run directory into a Weights & Biases offline run, without network.

    .venv/bin/python tools/wandb_sync.py RUN [--out DIR] [--project P] [--name N] [--id ID]
    wandb sync DIR/wandb/offline-run-*          # later, from a machine that may upload

Reads RUN/metrics.jsonl (the run's records) and RUN/config.yaml (the resolved config, logged as
the W&B run config) and writes an offline run under DIR/wandb/ (DIR defaults to RUN) with the
`wandb` package in offline mode (WANDB_MODE=offline: nothing leaves the machine). Its history
has one row per training step holding the same scalars, under the same names, as the run's
TensorBoard files (README "Monitoring"; src/train/metrics_log.h):
  alarm -> "alarm/<source>/<cause>" = 1; eval / benchmark / downstream ->
  "<kind>/<set|suite|task>/<field>"; other kinds -> "<kind>/<field>"; numbers and booleans,
  nested objects flattened with '/', a field name holding '/' is its own tag; "info" and
  "profile" records and "step", "time", "batch_hash" not shown.
Values keep metrics.jsonl's double precision (TensorBoard holds float32); a row's _timestamp is
the wall-clock "time" of the step's last record. metrics.jsonl is already the resumed run's
final view (each step once), so the export needs no resume handling.
Exit codes: 0 written, 1 a missing or malformed run directory (the message names the file).
"""
import argparse
import json
import os
import sys

DISCRIMINATOR = {"eval": "set", "benchmark": "suite", "downstream": "task"}
HIDDEN_KINDS = {"info", "profile"}
HIDDEN_FIELDS = {"kind", "step", "time", "batch_hash"}


def flatten(prefix, obj, top, out):
    for key, v in obj.items():
        if top and key in HIDDEN_FIELDS:
            continue
        tag = key if "/" in key else f"{prefix}/{key}"
        if isinstance(v, bool):
            out[tag] = int(v)
        elif isinstance(v, (int, float)):
            out[tag] = v
        elif isinstance(v, dict):
            flatten(tag, v, False, out)


def record_scalars(rec):
    """{tag: value} of one metrics record (the rule above)."""
    kind = rec.get("kind")
    if not kind or kind in HIDDEN_KINDS or not isinstance(rec.get("step"), int):
        return {}
    if kind == "alarm":
        return {f"alarm/{rec.get('source', '?')}/{rec.get('cause', '?')}": 1}
    fields, prefix = dict(rec), kind
    by = DISCRIMINATOR.get(kind)
    if by and isinstance(rec.get(by), str):
        prefix = f"{kind}/{fields.pop(by)}"
    out = {}
    flatten(prefix, fields, True, out)
    return out


def read_rows(path):
    """step -> (row dict, time of the step's last record), steps ascending."""
    rows = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise SystemExit(f"error: {path}:{n}: not JSON ({e.msg})")
            if not isinstance(rec, dict):
                raise SystemExit(f"error: {path}:{n}: not a JSON object")
            sc = record_scalars(rec)
            if not sc:
                continue
            row, t = rows.get(rec["step"], ({}, None))
            row.update(sc)
            rows[rec["step"]] = (row, rec.get("time", t))
    return dict(sorted(rows.items()))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", help="run directory (holds metrics.jsonl and config.yaml)")
    ap.add_argument("--out", help="directory for wandb/offline-run-* (default: RUN)")
    ap.add_argument("--project", default="olmo-cpp", help="W&B project (default olmo-cpp)")
    ap.add_argument("--name", help="run name (default: the config's name, else RUN's basename)")
    ap.add_argument("--id", help="W&B run id (default: a new random one)")
    a = ap.parse_args(argv)

    metrics = os.path.join(a.run, "metrics.jsonl")
    if not os.path.isfile(metrics):
        raise SystemExit(f"error: {metrics}: no such file (is {a.run} an olmo run directory?)")
    config = {}
    cpath = os.path.join(a.run, "config.yaml")
    if os.path.isfile(cpath):
        import yaml
        try:
            config = yaml.safe_load(open(cpath)) or {}
        except yaml.YAMLError as e:
            raise SystemExit(f"error: {cpath}: not YAML ({e})")
    rows = read_rows(metrics)

    os.environ["WANDB_MODE"] = "offline"
    os.environ.setdefault("WANDB_SILENT", "true")
    import wandb
    out = os.path.abspath(a.out or a.run)
    os.makedirs(out, exist_ok=True)
    settings = wandb.Settings(x_disable_stats=True, x_disable_meta=True, console="off",
                              save_code=False, disable_git=True, x_save_requirements=False)
    run = wandb.init(mode="offline", dir=out, project=a.project, id=a.id,
                     name=a.name or config.get("name") or os.path.basename(os.path.abspath(a.run)),
                     config=config, settings=settings)
    for step, (row, t) in rows.items():
        if t is not None:
            row = dict(row, _timestamp=t)
        run.log(row, step=step)
    run.finish()
    print(f"wandb-sync: {len(rows)} steps from {metrics} -> {run.settings.sync_dir} "
          f"(upload later with: wandb sync {run.settings.sync_dir})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
