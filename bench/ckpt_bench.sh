#!/usr/bin/env bash
# Checkpoint stall benchmark (issue 37 item 2): how long the training loop is blocked by a
# checkpoint with trainer.async_checkpoint true (staging copy + commit; the write runs on a
# background thread) vs false (the step waits for the whole write, fsync included). One process,
# random tokens (< 512) into a model of the given shape (default: olmo3-190m's, as
# bench/dist_bench.sh's flags), a checkpoint every step (--save-interval), keep_last 2; the modes
# alternate per round so machine noise hits both alike. From metrics.jsonl: the checkpoint
# records' ckpt_stall_s (main thread blocked: snapshot + wait for the previous write + commit),
# copy_s (staging memcpy) and staged_bytes (-> copy bandwidth), write_s (the write itself), and
# the train records' step_s (the step alone, without the checkpoint), plus each run's wall time.
# The last checkpoint (the end of the run) is excluded from the stall (always waited for).
# Prints the load average before and after (the machine may be shared).
# Usage: bench/ckpt_bench.sh [--d-model 768] [--layers 12] [--heads 12] [--ffn 3072]
#                            [--vocab 100352] [--seq 256] [--batch 1] [--steps 4] [--rounds 2]
#                            [--save-interval 1] [--dir DIR (run dirs; default a temporary dir on /tmp)]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
d=768 layers=12 heads=12 ffn=3072 vocab=100352 seq=256 batch=1 steps=4 rounds=2 dir= every=1
while [ $# -gt 0 ]; do
  case "$1" in
    --d-model) d=$2; shift 2 ;; --layers) layers=$2; shift 2 ;; --heads) heads=$2; shift 2 ;;
    --ffn) ffn=$2; shift 2 ;; --vocab) vocab=$2; shift 2 ;; --seq) seq=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;; --steps) steps=$2; shift 2 ;; --rounds) rounds=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;; --save-interval) every=$2; shift 2 ;;
    *) echo "ckpt_bench.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
olmo="${OLMO_BIN:-$root/build/olmo}"
py="${OLMO_PYTHON:-$root/.venv/bin/python}"
out="$(mktemp -d ${dir:+"$dir/ckpt_bench.XXXXXX"})"
trap 'rm -rf "$out"' EXIT
mkdir -p "$out/data"
"$py" -c "import numpy as np; np.random.default_rng(0).integers(2, 512, $((seq * batch * (steps + 2))), dtype=np.uint32).tofile('$out/data/part-0.npy')"
echo "bench,data/part-0.npy" > "$out/train.mix"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs, $(df -h --output=avail "$out" | tail -1 | tr -d ' ') free on $(df --output=source "$out" | tail -1)"
common=(data.mix="$out/train.mix" data.seq_len=$seq data.global_batch_tokens=$((seq * batch))
        data.micro_batch_tokens=$seq trainer.max_steps=$steps trainer.save_interval=$every
        trainer.keep_last=2 model.d_model=$d model.n_layers=$layers model.n_heads=$heads
        model.n_kv_heads=$heads model.ffn_hidden=$ffn model.vocab_size=$vocab
        "model.window_pattern=[$((seq / 4)),$((seq / 4)),$((seq / 4)),-1]" model.precision=fp32
        trainer.peak_interval=-1 eval.at_start=false validation.interval=0 trainer.progress=off
        trainer.param_rms_interval=0 trainer.check_memory=false)
for r in $(seq 1 "$rounds"); do
  for mode in true false; do
    run="$out/run-$mode-$r"
    t0=$(date +%s.%N)
    "$olmo" train "$root/tests/configs/tiny.yaml" "${common[@]}" trainer.run_dir="$run" \
      trainer.async_checkpoint=$mode >/dev/null
    "$py" -c "import sys; print(float(sys.argv[1]) - float(sys.argv[2]))" "$(date +%s.%N)" "$t0" > "$run/wall_s"
    rm -rf "$run"/step*
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$py" - "$out" "$rounds" <<'PY'
import json, os, sys
out, rounds = sys.argv[1], int(sys.argv[2])
m = lambda v: sum(v) / len(v) if v else float("nan")
res = {}
for mode in ("true", "false"):
    stall, copy, gbps, write, step, wall, steps_n, snap, commit = [], [], [], [], [], [], 0, [], []
    for r in range(1, rounds + 1):
        run = os.path.join(out, f"run-{mode}-{r}")
        recs = [json.loads(l) for l in open(os.path.join(run, "metrics.jsonl"))]
        start = [x for x in recs if x.get("event") == "start"][0]
        ck = [x for x in recs if x.get("event") == "checkpoint"]
        last = max(x["step"] for x in ck)
        ck = [x for x in ck if x["step"] != last]  # the end of the run always waits
        stall += [x["ckpt_stall_s"] for x in ck]; write += [x["write_s"] for x in ck]
        snap += [x["snapshot_s"] for x in ck]; commit += [x["commit_s"] for x in ck]
        copy += [x["copy_s"] for x in ck if x["copy_s"] > 0]
        gbps += [x["staged_bytes"] / x["copy_s"] / 1e9 for x in ck if x["copy_s"] > 0]
        step += [x["step_s"] for x in recs if x.get("kind") == "train"][1:]
        wall.append(float(open(os.path.join(run, "wall_s")).read()))
        steps_n = len([x for x in recs if x.get("kind") == "train"])
        nbytes = max((x["staged_bytes"] for x in ck), default=0)
    res[mode] = m(stall)
    print(f"async_checkpoint={mode:5s}: ckpt_stall_s {m(stall):.3f} (per save, {len(stall)} saves; "
          f"max {max(stall):.3f}; snapshot {m(snap):.3f} + wait/commit {m(commit):.3f}; each "
          f"{', '.join(f'{v:.2f}' for v in stall)}), write_s {m(write):.3f}, step_s {m(step):.3f} (steps 2..), "
          f"run wall {m(wall):.1f} s ({steps_n} steps), params {start['params']:,}"
          + (f", staging copy {m(copy):.3f} s for {nbytes / 1e9:.2f} GB = {m(gbps):.2f} GB/s" if copy else ""))
print(f"stall_async_s={res['true']:.3f} stall_sync_s={res['false']:.3f} "
      f"stall_ratio={res['true'] / res['false']:.3f}")
PY
