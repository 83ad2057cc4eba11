#!/usr/bin/env bash
# Step benchmark, ours vs PyTorch, in one invocation (builds nothing; needs build/olmo or $OLMO_BIN).
# Runs `olmo bench step` and bench/torch_step.py alternately for ROUNDS rounds on the same model,
# batch and thread count, then prints the mean figures and a last line exactly
#   mfu=NN.N% torch_ratio=N.NN
# (our forward+backward MFU against the peak measured in each run; our tokens/s over PyTorch's).
# PyTorch gets tcmalloc (LD_PRELOAD) when libtcmalloc_minimal.so.4 is installed.
# Usage: bench/compare.sh [--preset olmo3-190m] [--seq 2048] [--batch 1] [--steps 2]
#                         [--rounds 2] [--threads 2]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
preset=olmo3-190m seq=2048 batch=1 steps=2 rounds=2 threads=2
while [ $# -gt 0 ]; do
  case "$1" in
    --preset) preset=$2; shift 2 ;; --seq) seq=$2; shift 2 ;; --batch) batch=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;; --rounds) rounds=$2; shift 2 ;; --threads) threads=$2; shift 2 ;;
    *) echo "compare.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
olmo="${OLMO_BIN:-$root/build/olmo}"
py="${OLMO_PYTHON:-$root/.venv/bin/python}"
[ -x "$olmo" ] || { echo "compare.sh: $olmo not found (build first)" >&2; exit 1; }
tcm=""
for f in /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /usr/lib/libtcmalloc_minimal.so.4; do
  [ -e "$f" ] && { tcm=$f; break; }
done
[ -n "$tcm" ] || echo "compare.sh: note: tcmalloc not found, PyTorch runs with glibc malloc" >&2
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
export OMP_NUM_THREADS=$threads
for r in $(seq 1 "$rounds"); do
  echo "round $r/$rounds: ours" >&2
  "$olmo" bench step --preset "$preset" --seq "$seq" --batch "$batch" --steps "$steps" \
    --warmup 1 --json | tail -1 >> "$out/ours.jsonl"
  echo "round $r/$rounds: torch" >&2
  LD_PRELOAD="$tcm" OLMO_BIN="$olmo" "$py" "$root/bench/torch_step.py" --preset "$preset" \
    --seq "$seq" --batch "$batch" --steps "$steps" --warmup 1 --threads "$threads" \
    2>/dev/null | tail -1 >> "$out/torch.jsonl"
done
"$py" - "$out/ours.jsonl" "$out/torch.jsonl" <<'PY'
import json, sys
ours = [json.loads(l) for l in open(sys.argv[1])]
torch = [json.loads(l) for l in open(sys.argv[2])]
mean = lambda v: sum(v) / len(v)
for o in ours:
    print(f"ours : {o['tokens_per_second']:.1f} tok/s  {o['gflops']:.1f} GFLOP/s  "
          f"peak {o['peak_gflops']:.1f}  MFU {100*o['mfu']:.1f}%  cpu {100*o['cpu_utilisation']:.0f}%")
for t in torch:
    print(f"torch: {t['tokens_per_second']:.1f} tok/s  ({t['malloc']}, torch {t['torch']})")
mfu = mean([o["mfu"] for o in ours])
ratio = mean([o["tokens_per_second"] for o in ours]) / mean([t["tokens_per_second"] for t in torch])
print(f"mfu={100*mfu:.1f}% torch_ratio={ratio:.2f}")
PY
