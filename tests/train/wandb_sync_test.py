"""tools/wandb_sync.py end to end, without network: a tiny `olmo train` run (held-out eval and
validation every 5 steps, audit alarms from an injected data fault) is exported to a W&B
offline run, whose transaction log (offline-run-*/run-*.wandb) is then read back and compared
with metrics.jsonl.

The log is read here: wandb 0.31 dropped its Python reader (the Go wandb-core writes it), so
this test walks its documented framing (header ":W&B" 0xBEE1 v0, 32 KiB blocks of chunks
crc32 | uint16 length | type FULL/FIRST/MIDDLE/LAST, each CRC checked) and decodes every record
with wandb's own protobuf (wandb.proto.wandb_internal_pb2.Record).
Checks: one history row per step that has scalars, in step order; each row's keys and values
equal monitoring_util's scalars of that step's records (JSON doubles, exact); its _timestamp is
the "time" of the step's last record; the run's config holds RUN/config.yaml (model.d_model);
a directory without metrics.jsonl is refused naming the file (exit 1), writing nothing.
WANDB_BASE_URL points at a closed local port: any network use would fail the export.
Seen red: with record_scalars() of tools/wandb_sync.py dropping nested objects (validation
heldout/gap), the row comparison fails.
Cost: one tiny run and two exports, ~8 s.
"""
import glob
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

import monitoring_util as mu
import olmo_test as ot
from olmo_test import check, finish

from wandb.proto import wandb_internal_pb2 as pb


def wandb_records(path):
    """The protobuf Records of a .wandb transaction log, in order (CRCs checked)."""
    b = open(path, "rb").read()
    if b[:4] != b":W&B" or struct.unpack("<H", b[4:6])[0] != 0xBEE1 or b[6] != 0:
        raise AssertionError(f"{path}: not a W&B transaction log (header {b[:7]!r})")
    pos, block, out, part = 7, 32768, [], b""
    while pos + 7 <= len(b):
        left = block - pos % block
        if left < 7:  # block trailer padding
            pos += left
            continue
        crc, n, typ = struct.unpack("<IHB", b[pos:pos + 7])
        if typ == 0 and n == 0:
            break
        data = b[pos + 7:pos + 7 + n]
        if zlib.crc32(data, zlib.crc32(bytes([typ]))) & 0xFFFFFFFF != crc:
            raise AssertionError(f"{path}: CRC mismatch at byte {pos}")
        pos += 7 + n
        if typ == 1:
            out.append(data)
        elif typ == 2:
            part = data
        elif typ == 3:
            part += data
        elif typ == 4:
            out.append(part + data)
    recs = []
    for d in out:
        r = pb.Record()
        r.ParseFromString(d)
        recs.append(r)
    return recs


def expected_rows(run):
    """step -> ({tag: value}, time of the step's last record with scalars)."""
    rows = {}
    for r in mu.records(run):
        sc = mu.scalars_of(r)
        if sc:
            row = rows.setdefault(r["step"], [{}, None])
            row[0].update(sc)
            row[1] = r["time"]
    return rows


def sync(*args):
    env = dict(os.environ, WANDB_BASE_URL="http://127.0.0.1:9", WANDB_API_KEY="")
    env.pop("WANDB_MODE", None)  # the tool must set offline mode itself
    src = os.environ.get("OLMO_SOURCE_DIR", ".")
    return subprocess.run([sys.executable, os.path.join(src, "tools", "wandb_sync.py"), *args],
                          capture_output=True, text=True, env=env, timeout=45)


def main():
    tmp = tempfile.mkdtemp(prefix="olmo_wandb_")
    try:
        run = os.path.join(tmp, "run")
        ot.olmo("train", *mu.train_args(tmp), f"trainer.run_dir={run}", *mu.AUDIT_FAULT)
        p = sync(run, "--out", os.path.join(tmp, "out"))
        check(p.returncode == 0, f"wandb_sync exit 0 (got {p.returncode}) {p.stderr[-400:]}")
        logs = glob.glob(os.path.join(tmp, "out", "wandb", "offline-run-*", "run-*.wandb"))
        check(len(logs) == 1, f"one offline run written: {logs}")
        if not logs:
            finish("wandb_sync")  # exits 1: nothing to read back
        recs = wandb_records(logs[0])
        hist = [r.history for r in recs if r.WhichOneof("record_type") == "history"]
        got = {}
        for h in hist:
            row = {(i.key or "/".join(i.nested_key)): json.loads(i.value_json) for i in h.item}
            got[h.step.num] = row
        want = expected_rows(run)
        check([h.step.num for h in hist] == sorted(want),
              f"one history row per step with scalars, in order: {len(hist)} rows, steps "
              f"{[h.step.num for h in hist][:6]}... (want {len(want)})")
        bad = []
        for step, (row, t) in want.items():
            g = dict(got.get(step, {}))
            gt = g.pop("_timestamp", None)
            g.pop("_runtime", None)
            g.pop("_step", None)
            if g != row or gt != t:
                keys = sorted(set(g) ^ set(row)) or [k for k in row if g.get(k) != row[k]]
                bad.append((step, keys[:4], gt, t))
        check(not bad, f"every row equals metrics.jsonl's scalars of its step and its time "
              f"({sum(len(r) for r, _ in want.values())} values)" + (f"; differ: {bad[:3]}" if bad else ""))
        tags = set().union(*(r for r, _ in want.values()))
        check({"train/loss", "train/lr", "eval/val/loss", "validation/heldout/val"} <= tags and
              any(t.startswith("alarm/") for t in tags), "rows hold train, eval, validation, alarm")
        cfg = {}
        for r in recs:
            if r.WhichOneof("record_type") == "run":
                cfg.update({i.key: json.loads(i.value_json) for i in r.run.config.update})
        model = cfg.get("model", {})
        model = model.get("value", model) if isinstance(model, dict) else {}
        check(model.get("d_model") == 64, f"run config holds config.yaml (model.d_model 64): "
              f"{str(cfg.get('model'))[:120]}")

        empty = os.path.join(tmp, "empty")
        os.makedirs(empty)
        p = sync(empty)
        check(p.returncode == 1 and os.path.join(empty, "metrics.jsonl") in p.stderr and
              not os.path.exists(os.path.join(empty, "wandb")),
              f"a dir without metrics.jsonl: exit 1 naming the file, nothing written "
              f"(rc {p.returncode}: {p.stderr.strip()[:200]})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish("wandb_sync")


if __name__ == "__main__":
    main()
