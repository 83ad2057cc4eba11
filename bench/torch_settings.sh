#!/usr/bin/env bash
# Which PyTorch settings are the peer's best on this machine: runs bench/torch_step.py --optimizer
# (full step: forward, backward, fused AdamW) for each precision under each setting, alternating
# settings within a round, and prints full-step tokens/s per (precision, setting) plus the winner
# per precision. Settings: eager / torch.compile (inductor, default mode), each with
# torch.backends.mkldnn on and off; all with tcmalloc (LD_PRELOAD, when installed), SDPA and
# --threads threads. The compile time is excluded (it falls in the warm-up steps) and reported.
# Usage: bench/torch_settings.sh [--precision fp32|bf16|both] [--preset olmo3-190m] [--seq 2048]
#                                [--steps 2] [--warmup 2] [--rounds 1] [--threads 2] [--out DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
preset=olmo3-190m seq=2048 steps=2 warmup=2 rounds=1 threads=2 precision=both out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --preset) preset=$2; shift 2 ;; --seq) seq=$2; shift 2 ;; --steps) steps=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;; --rounds) rounds=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;; --precision) precision=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "torch_settings.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
case "$precision" in
  fp32|bf16) precs=$precision ;; both) precs="bf16 fp32" ;;
  *) echo "torch_settings.sh: --precision must be fp32, bf16 or both" >&2; exit 2 ;;
esac
py="${OLMO_PYTHON:-$root/.venv/bin/python}"
olmo="${OLMO_BIN:-$root/build/olmo}"
tcm=""
for f in /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /usr/lib/libtcmalloc_minimal.so.4; do
  [ -e "$f" ] && { tcm=$f; break; }
done
if [ -z "$out" ]; then out="$(mktemp -d)"; trap 'rm -rf "$out"' EXIT; else mkdir -p "$out"; fi
rm -f "$out"/settings.jsonl
export OMP_NUM_THREADS=$threads
"$olmo" info --preset "$preset" --json > "$out/info.json"
for r in $(seq 1 "$rounds"); do
  for p in $precs; do
    for setting in "eager on" "eager off" "compile on" "compile off"; do
      set -- $setting
      args=(--mkldnn "$2"); [ "$1" = compile ] && args+=(--compile)
      echo "round $r/$rounds: torch $p $1 mkldnn=$2 ($(date -u +%T))" >&2
      LD_PRELOAD="$tcm" "$py" "$root/bench/torch_step.py" --info-json "$out/info.json" \
        --preset "$preset" --seq "$seq" --steps "$steps" --warmup "$warmup" \
        --threads "$threads" --optimizer --precision "$p" "${args[@]}" 2> "$out/err.txt" \
        | tail -1 >> "$out/settings.jsonl" || { echo "  failed:"; tail -5 "$out/err.txt"; }
    done
  done
done
"$py" - "$out/settings.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
best = {}
agg = {}
for r in rows:
    k = (r["precision"], "compile" if r["compile"] else "eager", r["mkldnn"])
    agg.setdefault(k, []).append(r)
for (p, mode, mk), rs in sorted(agg.items()):
    tps = sum(r["full_step_tokens_per_second"] for r in rs) / len(rs)
    wu = sum(r["warmup_seconds"] for r in rs) / len(rs)
    print(f"torch {p:4s} {mode:7s} mkldnn={mk:3s}: {tps:6.1f} tok/s full step "
          f"(fwd+bwd {sum(r['tokens_per_second'] for r in rs)/len(rs):6.1f}, warm-up incl. "
          f"compile {wu:5.1f} s, {len(rs)} run(s), {rs[0]['malloc']})")
    if p not in best or tps > best[p][0]:
        best[p] = (tps, mode, mk)
for p, (tps, mode, mk) in sorted(best.items()):
    print(f"best {p}: {mode} mkldnn={mk} ({tps:.1f} tok/s)")
PY
