#!/usr/bin/env bash
# Demo-size side-by-side run of olmo.cpp and OLMo-core's own Trainer (issue 19; README
# "Reproducing OLMo-core"): configs/demo.yaml's architecture (d_model 128, 8 layers, seq 256,
# window 64, SkipStepAdamW, cosine, z-loss) with the vocabulary cut to 8192 on synthetic token
# files (the demo corpus needs a network download; a 100k vocabulary costs ~15 s per OLMo-core
# step on 2 busy cores), STEPS pre-training steps + STEPS2 mid-training steps (LinearWithWarmup
# to 0 on other data, optimizer state carried, trainer state reset) in both frameworks:
#   OUT/ref1, OUT/ref2     OLMo-core reference runs (+ noise_twin, noise_floor.json)
#   OUT/ours1, OUT/ours2   olmo.cpp from the same initial weights / its own stage-1 checkpoint
#   OUT/compare{1,2}.txt   `olmo compare` tables; OUT/boundary.txt the stage-boundary check
#   bench/results/olmo_core_reference.png   loss curves and |diff| against the noise floor
# Env: OUT (runs/olmo_core_demo), STEPS (200), STEPS2 (20), THREADS (1 per process).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=$(realpath -m "${OUT:-runs/olmo_core_demo}")
STEPS=${STEPS:-200}
STEPS2=${STEPS2:-20}
THREADS=${THREADS:-1}
PY=.venv/bin/python
mkdir -p "$OUT/data"
"$PY" - "$OUT/data" <<'PYEOF'
# Synthetic documents: ids 10..8009, an affine bigram chain with 30% Zipf-distributed jumps,
# EOS (0) every 50-400 tokens.
import os, sys
import numpy as np
root = sys.argv[1]
def stream(n, seed, V=8000):
    rng = np.random.default_rng(seed)
    z = (rng.zipf(1.3, size=n) % V).astype(np.uint32) + 10
    jump = rng.random(n) < 0.3
    out = np.empty(n, dtype=np.uint32)
    t, nxt = 11, int(rng.integers(50, 400))
    for i in range(n):
        if i == nxt:
            out[i] = 0
            nxt = i + 1 + int(rng.integers(50, 400))
            continue
        out[i] = t
        t = int(z[i]) if jump[i] else (7 * t + 13) % V + 10
    return out
for name, n, seed in (("train", 700_000, 1), ("train2", 120_000, 2), ("val", 40_000, 3)):
    os.makedirs(f"{root}/{name}", exist_ok=True)
    stream(n, seed).tofile(f"{root}/{name}/part-0.npy")
open(f"{root}/train.mix", "w").write("synthetic,train/part-0.npy\n")
open(f"{root}/train2.mix", "w").write("synthetic2,train2/part-0.npy\n")
PYEOF
COMMON=(configs/demo.yaml "data.mix=$OUT/data/train.mix" "eval.sets={val: $OUT/data/val}"
        "validation.sets={}" validation.interval=50 validation.max_instances=16
        "benchmarks.suites={}" "benchmarks.canaries=" model.precision=fp32 model.vocab_size=8192
        data.eos_id=0 data.pad_id=1 eval.interval=0 trainer.progress=off trainer.peak_interval=-1)
S1=(trainer.max_steps=$STEPS trainer.save_interval=$STEPS)
S2=("data.mix=$OUT/data/train2.mix" data.seed=1337 optim.lr=1e-3 scheduler.name=linear_with_warmup
    scheduler.warmup_steps=0 scheduler.alpha_f=0 trainer.max_steps=$STEPS2 trainer.save_interval=0
    trainer.load_trainer_state=false trainer.load_optim_state=true)
rm -rf "$OUT"/ref1 "$OUT"/ref2 "$OUT"/ours1 "$OUT"/ours2
t0=$(date +%s)
# Stage 1: the reference (and its twin) in the background; olmo.cpp once init_hf exists.
"$PY" scripts/olmo_core_run.py "${COMMON[@]}" "${S1[@]}" --run-dir "$OUT/ref1" --threads "$THREADS" \
  --noise-floor > "$OUT/ref1.log" 2>&1 &
ref=$!
while [ ! -f "$OUT/ref1/init_hf/model.safetensors" ]; do
  kill -0 $ref 2>/dev/null || { cat "$OUT/ref1.log"; exit 1; }
  sleep 2
done
sleep 2
OMP_NUM_THREADS=$THREADS build/olmo train "${COMMON[@]}" "${S1[@]}" "trainer.run_dir=$OUT/ours1" \
  "trainer.init_from_hf=$OUT/ref1/init_hf" trainer.log_batch_indices=true > "$OUT/ours1.log" 2>&1
wait $ref
echo "stage 1 done after $(( $(date +%s) - t0 )) s"
# Stage 2 from each side's own stage-1 checkpoint.
"$PY" scripts/olmo_core_run.py "${COMMON[@]}" "${S2[@]}" "trainer.load_path=$OUT/ref1" \
  --run-dir "$OUT/ref2" --threads "$THREADS" --noise-floor > "$OUT/ref2.log" 2>&1 &
ref=$!
OMP_NUM_THREADS=$THREADS build/olmo train "${COMMON[@]}" "${S2[@]}" "trainer.load_path=$OUT/ours1" \
  "trainer.run_dir=$OUT/ours2" trainer.log_batch_indices=true > "$OUT/ours2.log" 2>&1
wait $ref
echo "stage 2 done after $(( $(date +%s) - t0 )) s"
build/olmo compare "$OUT/ours1" "$OUT/ref1" --no-plot > "$OUT/compare1.txt" || true
build/olmo compare "$OUT/ours2" "$OUT/ref2" --no-plot > "$OUT/compare2.txt" || true
"$PY" scripts/olmo_core_ckpt.py boundary "$OUT/ours1/step$STEPS" "$OUT/ref1/step$STEPS" \
  "$OUT/ref1/noise_twin/step$STEPS" > "$OUT/boundary.txt" 2>/dev/null || true
"$PY" scripts/plot_reference.py "$OUT" --out bench/results/olmo_core_reference.png
tail -n 3 "$OUT/compare1.txt" "$OUT/compare2.txt" "$OUT/boundary.txt"
