#!/usr/bin/env bash
# Distributed step benchmark: step time and communication share of `olmo train` at 1 and 2
# processes (or the --procs list; one thread each, mpirun on loopback/shared memory), dist.reduce exact vs fast, in
# one invocation (alternating, so machine noise hits all four alike; even rounds run the modes
# in reverse order, so a setting that runs first in a round is not always the same one). Random tokens (< 512) into
# a model of the given shape; steps after the first are timed (metrics.jsonl step_s / comm_s;
# the exact reduction's first step measures its scales and is done twice). Each round also runs
# the peer of "2 processes x 1 thread": 1 process x 2 threads (exact).
# At 2 processes a third setting, exact-seq, runs the exact reduction after the backward
# (dist.overlap=false) to show what the overlap hides (comm = exposed waits).
# Prints one line per setting and a last line exactly
#   exact_cost_np1=N.NN% exact_cost_np2=N.NN% comm_share_np2_exact=N.N% comm_share_np2_fast=N.N%
#   comm_share_np2_exact_no_overlap=N.N% np2x1_vs_np1x2_tokens=N.N%
# (exact_cost = mean step time exact / fast - 1 at the same world size; the last figure = tokens/s
# of 2 processes x 1 thread over 1 process x 2 threads, both exact).
# With trainer.profile on, it also prints per setting the mean per-step time of the exact
# path's parts (profile rows exact_convert = fixed-point conversion + accumulator adds,
# exact_keep = the copies of each instance's fp32 gradient that a rescale replays and the
# deferred conversion reads, exact_zero_grad = the per-micro-batch gradient clear (0 where the conversion clears the
# gradient in its own pass), reduce_finish = staging / unpacking / rounding (at 1 process the
# rounding runs inside the last micro-batch's conversion, so it counts in exact_convert),
# comm = waits inside communication calls, optimizer = the AdamW shard update; fwd_bwd_rest =
# the step less those rows: forward, backward and the rest), each timed step's time (the spread
# that noise gives) and the conversion cost in ns per parameter per instance (exact converts
# each instance's gradient once; --micro sets fast's micro-batch only). The machine's
# load average is printed before and after. Each run's final checkpoint is deleted after it
# (only metrics.jsonl is read; 3.2 GB each at olmo3-190m).
# --procs "1 2 3" times those world sizes (fast needs each to divide batch / micro; exact runs
# any count up to batch); --no-peers leaves out exact-seq and the 1 x 2 threads peer (then the
# last line is exact_cost_npN=N.NN% for each N only).
# Usage: bench/dist_bench.sh [--d-model 256] [--layers 4] [--heads d/64] [--ffn 8d/3 up to 256]
#                            [--vocab 8192] [--seq 256] [--window "[s/4,s/4,s/4,-1]"]
#                            [--precision fp32] [--batch 8] [--micro 2] [--steps 4] [--rounds 2]
#                            [--procs "1 2"] [--no-peers]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
d=256 layers=4 vocab=8192 seq=256 batch=8 micro=2 steps=4 rounds=2 heads= ffn= window= prec=fp32
procs="1 2" peers=1
while [ $# -gt 0 ]; do
  case "$1" in
    --d-model) d=$2; shift 2 ;; --layers) layers=$2; shift 2 ;; --vocab) vocab=$2; shift 2 ;;
    --seq) seq=$2; shift 2 ;; --batch) batch=$2; shift 2 ;; --micro) micro=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;; --rounds) rounds=$2; shift 2 ;;
    --heads) heads=$2; shift 2 ;; --ffn) ffn=$2; shift 2 ;; --window) window=$2; shift 2 ;;
    --precision) prec=$2; shift 2 ;;
    --procs) procs=$2; shift 2 ;; --no-peers) peers=0; shift ;;
    *) echo "dist_bench.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
olmo="${OLMO_BIN:-$root/build/olmo}"
py="${OLMO_PYTHON:-$root/.venv/bin/python}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
mkdir -p "$out/data"
"$py" -c "import numpy as np; np.random.default_rng(0).integers(2, 512, $((seq * batch * (steps + 2))), dtype=np.uint32).tofile('$out/data/part-0.npy')"
echo "bench,data/part-0.npy" > "$out/train.mix"
[ -n "$ffn" ] || ffn=$(( (8 * d / 3 + 255) / 256 * 256 ))
[ -n "$heads" ] || heads=$((d / 64))
[ -n "$window" ] || window="[$((seq / 4)),$((seq / 4)),$((seq / 4)),-1]"
for np_ in $procs; do
  if [ $(( (batch / micro) % np_ )) != 0 ]; then
    echo "dist_bench.sh: fast mode cannot run $((batch / micro)) micro-batches on $np_ processes (--batch / --micro must be a multiple of each of --procs)" >&2
    exit 2
  fi
done
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"

common=(data.mix="$out/train.mix" data.seq_len=$seq data.global_batch_tokens=$((seq * batch))
        data.micro_batch_tokens=$((seq * micro)) trainer.max_steps=$steps trainer.threads=1
        model.d_model=$d model.n_layers=$layers model.n_heads=$heads model.n_kv_heads=$heads
        model.ffn_hidden=$ffn model.vocab_size=$vocab "model.window_pattern=$window"
        model.precision=$prec trainer.peak_interval=0 eval.at_start=false trainer.progress=off
        trainer.profile=true)
"$olmo" info --preset olmo3-7b >/dev/null
for r in $(seq 1 "$rounds"); do
  for np_ in $procs; do
    modes="exact fast"; [ "$np_" = 2 ] && [ "$peers" = 1 ] && modes="exact fast exact-seq"
    [ $((r % 2)) = 0 ] && modes="$(echo $modes | tr ' ' '\n' | tac | tr '\n' ' ')"
    for mode in $modes; do
      run="$out/run-$np_-$mode-$r"
      # exact-seq: the exact reduction after the backward (dist.overlap=false), the figure
      # that shows what the overlap hides.
      OMP_NUM_THREADS=1 mpirun --oversubscribe --allow-run-as-root -np $np_ "$olmo" train \
        "$root/tests/configs/tiny.yaml" "${common[@]}" trainer.run_dir="$run" \
        dist.reduce="${mode%-seq}" dist.overlap=$([ "$mode" = exact-seq ] && echo false || echo true) >/dev/null
      # Only metrics.jsonl is read: drop the run's final checkpoint (3.2 GB at olmo3-190m).
      find "$run" -mindepth 1 -maxdepth 1 -type d -exec rm -rf {} +
    done
  done
  # The peer of "2 processes x 1 thread": 1 process with 2 threads (default exact reduction).
  [ "$peers" = 1 ] || continue
  OMP_NUM_THREADS=2 "$olmo" train "$root/tests/configs/tiny.yaml" "${common[@]}" trainer.threads=2 \
    trainer.run_dir="$out/run-1t2-exact-$r" dist.reduce=exact >/dev/null
  find "$out/run-1t2-exact-$r" -mindepth 1 -maxdepth 1 -type d -exec rm -rf {} +
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$py" - "$out" "$rounds" "$batch" "$micro" "$procs" "$peers" <<'PY'
import json, os, sys
out, rounds, batch, micro = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
procs, peers = [int(p) for p in sys.argv[5].split()], sys.argv[6] == "1"
parts = ("exact_convert", "exact_keep", "exact_zero_grad", "reduce_finish", "comm", "optimizer")
res = {}
for np_ in procs:
    for mode in ("exact", "fast") + (("exact-seq",) if np_ == 2 and peers else ()):
        st, cm, tps, mfu = [], [], [], []
        prof = {k: [] for k in parts}
        for r in range(1, rounds + 1):
            recs = [json.loads(l) for l in open(os.path.join(out, f"run-{np_}-{mode}-{r}", "metrics.jsonl"))]
            for p in [x for x in recs if x.get("kind") == "profile"][:1]:  # rank 0's
                rows = {row["op"]: row["seconds"] for row in p["rows"]}
                for k in parts:
                    prof[k].append(rows.get(k, 0.0))
            info = [x for x in recs if x.get("event") == "start"][0]
            tr = [x for x in recs if x.get("kind") == "train"][1:]  # step 1 measures the scales
            st += [x["step_s"] for x in tr]; cm += [x["comm_s"] for x in tr]
            tps += [x["tokens_per_s"] for x in tr]; mfu += [x["mfu"] for x in tr]
        m = lambda v: sum(v) / len(v)
        res[(np_, mode)] = (m(st), m(cm))
        print(f"np {np_} {mode:9s}: step {m(st):.3f} s, comm {m(cm):.3f} s ({100*m(cm)/m(st):.1f}%), "
              f"{m(tps):.0f} tokens/s, MFU {m(mfu):.1f}%, params {info['params']:,}, "
              f"precision {info.get('precision', '?')}, accumulator {info.get('exact_accumulator', '-')}")
        print(f"    timed steps (s, rounds in order): {' '.join(f'{x:.3f}' for x in st)}")
        if prof["comm"]:
            mb = -(-batch // np_)  # exact: instances (its conversion unit) per rank per step
            pr = {k: m(v) for k, v in prof.items()}
            pr["fwd_bwd_rest"] = m(st) - sum(pr.values())  # the step less the rows above
            print("    profile per step (rank 0): " + ", ".join(f"{k} {v:.3f} s ({100*v/m(st):.1f}%)" for k, v in pr.items())
                  + (f"; conversion {1e9*pr['exact_convert']/(mb*info['params']):.2f} ns/param/instance"
                     f" ({mb} instances/rank)" if mode.startswith("exact") else ""))
if not peers or procs != [1, 2]:
    print(" ".join(f"exact_cost_np{p}={100 * (res[(p, 'exact')][0] / res[(p, 'fast')][0] - 1):.2f}%" for p in procs))
    sys.exit(0)
t2 = []
for r in range(1, rounds + 1):
    recs = [json.loads(l) for l in open(os.path.join(out, f"run-1t2-exact-{r}", "metrics.jsonl"))]
    t2 += [x["tokens_per_s"] for x in recs if x.get("kind") == "train"][1:]
tp2 = sum(t2) / len(t2)
print(f"np 1 x 2 threads exact: {tp2:.0f} tokens/s")
c1 = 100 * (res[(1, "exact")][0] / res[(1, "fast")][0] - 1)
c2 = 100 * (res[(2, "exact")][0] / res[(2, "fast")][0] - 1)
s2e = 100 * res[(2, "exact")][1] / res[(2, "exact")][0]
s2f = 100 * res[(2, "fast")][1] / res[(2, "fast")][0]
tps2 = {}
for mode in ("exact", "fast"):
    v = []
    for r in range(1, rounds + 1):
        recs = [json.loads(l) for l in open(os.path.join(out, f"run-2-{mode}-{r}", "metrics.jsonl"))]
        v += [x["tokens_per_s"] for x in recs if x.get("kind") == "train"][1:]
    tps2[mode] = sum(v) / len(v)
s2q = 100 * res[(2, "exact-seq")][1] / res[(2, "exact-seq")][0]
print(f"exact_cost_np1={c1:.2f}% exact_cost_np2={c2:.2f}% comm_share_np2_exact={s2e:.1f}% comm_share_np2_fast={s2f:.1f}% "
      f"comm_share_np2_exact_no_overlap={s2q:.1f}% np2x1_vs_np1x2_tokens={100 * tps2['exact'] / tp2:.1f}%")
PY
