#!/usr/bin/env bash
# Training-step benchmark, ours vs PyTorch, in one invocation (builds nothing; needs build/olmo or
# $OLMO_BIN). Runs `olmo bench step --optimizer` and bench/torch_step.py --optimizer alternately
# for ROUNDS rounds on the same model, batch and thread count: the full step (forward, backward,
# AdamW). --precision fp32 | bf16_mixed | both: ours fp32 vs PyTorch fp32, ours bf16_mixed vs
# PyTorch bf16 autocast, or all four in one alternating run (ours fp32, torch fp32, ours bf16,
# torch bf16 per round). Prints the mean figures and, per precision, a line exactly
#   <precision>: mfu=NN.N% torch_ratio=N.NN
# (our full-step MFU, the mean over the rounds of each run's `olmo bench step` figure: its
# timed steps' wall time against that run's peak of that precision -- the higher of its two
# probes, raised to the achieved rate when that is higher, so each is at most 100%; our
# full-step tokens/s over PyTorch's). With one precision the last line is that line without the
# prefix.
# --profile adds `--profile` to our runs of the last round and prints the profile tables.
# --out DIR keeps the raw JSON lines and profiles there (default: a temporary dir, removed).
# In "both" the bf16 pair runs first in each round (ours bf16, torch bf16, ours fp32, torch fp32).
# PyTorch gets tcmalloc (LD_PRELOAD) when libtcmalloc_minimal.so.4 is installed, SDPA, mkldnn on,
# and per precision the extra torch_step.py arguments of --torch-fp32 / --torch-bf16, whose
# defaults are the winners of bench/torch_settings.sh on this machine
# (bench/results/torch_settings.md).
# Usage: bench/compare.sh [--precision fp32|bf16_mixed|both] [--preset olmo3-190m] [--seq 2048]
#                         [--batch 1] [--steps 2] [--rounds 2] [--threads 2] [--profile]
#                         [--warmup 1] [--out DIR] [--torch-fp32 ARGS] [--torch-bf16 ARGS]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
preset=olmo3-190m seq=2048 batch=1 steps=2 rounds=2 threads=2 precision=fp32 profile=0 keep="" warmup=1
torch_fp32="--compile" torch_bf16="--compile"
while [ $# -gt 0 ]; do
  case "$1" in
    --preset) preset=$2; shift 2 ;; --seq) seq=$2; shift 2 ;; --batch) batch=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;; --rounds) rounds=$2; shift 2 ;; --threads) threads=$2; shift 2 ;;
    --precision) precision=$2; shift 2 ;; --profile) profile=1; shift ;;
    --out) keep=$2; shift 2 ;; --warmup) warmup=$2; shift 2 ;;
    --torch-fp32) torch_fp32=$2; shift 2 ;; --torch-bf16) torch_bf16=$2; shift 2 ;;
    *) echo "compare.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
case "$precision" in
  fp32) precs="fp32" ;; bf16_mixed) precs="bf16_mixed" ;; both) precs="bf16_mixed fp32" ;;
  *) echo "compare.sh: --precision must be fp32, bf16_mixed or both, got '$precision'" >&2; exit 2 ;;
esac
olmo="${OLMO_BIN:-$root/build/olmo}"
py="${OLMO_PYTHON:-$root/.venv/bin/python}"
[ -x "$olmo" ] || { echo "compare.sh: $olmo not found (build first)" >&2; exit 1; }
tcm=""
for f in /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /usr/lib/libtcmalloc_minimal.so.4; do
  [ -e "$f" ] && { tcm=$f; break; }
done
[ -n "$tcm" ] || echo "compare.sh: note: tcmalloc not found, PyTorch runs with glibc malloc" >&2
if [ -n "$keep" ]; then
  out=$keep; mkdir -p "$out"; rm -f "$out"/ours_*.jsonl "$out"/torch_*.jsonl "$out"/profile_*.txt
else
  out="$(mktemp -d)"
  trap 'rm -rf "$out"' EXIT
fi
export OMP_NUM_THREADS=$threads
for r in $(seq 1 "$rounds"); do
  for p in $precs; do
    tp=fp32 targs=$torch_fp32; [ "$p" = bf16_mixed ] && tp=bf16 targs=$torch_bf16
    prof=(); [ "$profile" = 1 ] && [ "$r" = "$rounds" ] && prof=(--profile)
    echo "round $r/$rounds: ours $p ($(date -u +%T))" >&2
    if ! "$olmo" bench step --preset "$preset" --seq "$seq" --batch "$batch" --steps "$steps" \
      --warmup "$warmup" --optimizer --precision "$p" --json "${prof[@]}" 2> "$out/stderr_$p.txt" \
      | tail -1 >> "$out/ours_$p.jsonl"; then
      echo "compare.sh: olmo bench step --precision $p failed:" >&2
      tail -3 "$out/stderr_$p.txt" >&2
      exit 1
    fi
    [ ${#prof[@]} -gt 0 ] && cp "$out/stderr_$p.txt" "$out/profile_$p.txt"
    echo "round $r/$rounds: torch $tp ($(date -u +%T))" >&2
    # torch.compile compiles the forward in warm-up step 1 and finishes (backward) in step 2:
    # a compiled peer gets at least 2 warm-up steps, so no compilation is timed.
    twarm=$warmup; case " $targs " in *" --compile "*) [ "$twarm" -lt 2 ] && twarm=2 ;; esac
    LD_PRELOAD="$tcm" OLMO_BIN="$olmo" "$py" "$root/bench/torch_step.py" --preset "$preset" \
      --seq "$seq" --batch "$batch" --steps "$steps" --warmup "$twarm" --threads "$threads" \
      --optimizer --precision "$tp" $targs 2>/dev/null | tail -1 >> "$out/torch_$p.jsonl"
  done
done
"$py" - "$out" "$precision" $precs <<'PY'
import json, os, sys
out, mode, precs = sys.argv[1], sys.argv[2], sys.argv[3:]
mean = lambda v: sum(v) / len(v)
lines = []
for p in precs:
    ours = [json.loads(l) for l in open(os.path.join(out, f"ours_{p}.jsonl"))]
    torch = [json.loads(l) for l in open(os.path.join(out, f"torch_{p}.jsonl"))]
    bpeak = lambda o: f"{o['peak_bf16_gflops']:.1f}" if o['peak_bf16_gflops'] > 0 else "none"
    for o in ours:
        print(f"ours  {p:10s}: {o['full_step_tokens_per_second']:.1f} tok/s full step "
              f"(fwd+bwd {o['tokens_per_second']:.1f}, AdamW {o['optimizer_seconds_mean']:.2f} s)  "
              f"{o['gflops']:.1f} GFLOP/s fwd+bwd  peaks fp32 {o['peak_fp32_gflops']:.1f} / bf16 "
              f"{bpeak(o)}{' (raised to the achieved)' if o.get('peak_raised') else ''}  "
              f"MFU {100*o['full_step_mfu']:.1f}% full step "
              f"(vs {'bf16' if p == 'bf16_mixed' else 'fp32'} peak)  cpu {100*o['cpu_utilisation']:.0f}%")
    for t in torch:
        print(f"torch {t['precision']:10s}: {t['full_step_tokens_per_second']:.1f} tok/s full step "
              f"(fwd+bwd {t['tokens_per_second']:.1f}, AdamW {t['optimizer_seconds_mean']:.2f} s)  "
              f"({t['malloc']}, torch {t['torch']}, compile {t['compile']}, mkldnn {t['mkldnn']})")
    mfu = mean([o["full_step_mfu"] for o in ours])
    ratio = (mean([o["full_step_tokens_per_second"] for o in ours]) /
             mean([t["full_step_tokens_per_second"] for t in torch]))
    lines.append(f"{p}: mfu={100*mfu:.1f}% torch_ratio={ratio:.2f}")
for p in precs:
    f = os.path.join(out, f"profile_{p}.txt")
    if os.path.exists(f):
        print(open(f).read().rstrip())
for l in lines:
    print(l)
if len(precs) == 1:
    print(lines[0].split(": ", 1)[1])
PY
