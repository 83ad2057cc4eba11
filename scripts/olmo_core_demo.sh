#!/usr/bin/env bash
# Demo-size side-by-side run of olmo.cpp and OLMo-core's own Trainer (issue 19; README
# "Reproducing OLMo-core"): configs/demo.yaml as it is (d_model 128, 8 layers, vocabulary 100352
# with the dolma2 tokenizer, seq 256, window 64, SkipStepAdamW lr 3e-2, cosine with 20 warmup
# steps, z-loss 1e-5, clipping 1.0) on the demo corpus (data/tokens: train.mix, validation on
# val_id; `make corpus` builds it), fp32, with these changes for a run this short: STEPS
# pre-training steps (the cosine's t_max is max_steps, so the schedule is demo.yaml's compressed
# to STEPS, the same on both sides), validation every VAL_INTERVAL steps, no eval sets / benchmarks
# / canaries (OLMo-core has no benchmark suites), then STEPS2 mid-training steps (LinearWithWarmup
# to 0 at lr 1e-3, the same corpus in another order (data.seed 1337), optimizer state carried and
# trainer state reset), in both frameworks:
#   OUT/ref1, OUT/ref2     OLMo-core reference runs (+ noise_twin and clip_twin, run alongside;
#                          noise_floor.json: scripts/noise_floor.py)
#   OUT/ours1, OUT/ours2   olmo.cpp from the same initial weights / its own stage-1 checkpoint
#   OUT/compare{1,2}.txt   `olmo compare` tables; OUT/boundary.txt the stage-boundary check
#   bench/results/olmo_core_reference_demo.png   loss curves and |diff| against the noise floor
# Env: OUT (runs/olmo_core_demo), STEPS (100), STEPS2 (20), VAL_INTERVAL (25), THREADS (1 per
# process). Cost at 1 thread: ~15 s per OLMo-core step (the 100352 x 128 LM head dominates), run
# three times (reference and its two twins, in parallel) plus ~2 s per olmo.cpp step: 4
# processes, ~30 min for the default on 4 free cores.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=$(realpath -m "${OUT:-runs/olmo_core_demo}")
STEPS=${STEPS:-100}
STEPS2=${STEPS2:-20}
VAL_INTERVAL=${VAL_INTERVAL:-25}
THREADS=${THREADS:-1}
PY=.venv/bin/python
[ -f data/tokens/train.mix ] && [ -d data/tokens/val_id ] ||
  { echo "data/tokens/train.mix or data/tokens/val_id missing: run make corpus" >&2; exit 1; }
mkdir -p "$OUT"
COMMON=(configs/demo.yaml "validation.interval=$VAL_INTERVAL" eval.at_start=false eval.interval=0
        "benchmarks.suites={}" "benchmarks.canaries=" "benchmarks.tasks=[]" model.precision=fp32 trainer.progress=off
        trainer.peak_interval=-1)
S1=(trainer.max_steps=$STEPS trainer.save_interval=$STEPS)
S2=(data.seed=1337 optim.lr=1e-3 scheduler.name=linear_with_warmup scheduler.warmup_steps=0
    scheduler.alpha_f=0 trainer.max_steps=$STEPS2 trainer.save_interval=0
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
  "$OUT/ref1/noise_twin/step$STEPS" "$OUT/ref1/clip_twin/step$STEPS" > "$OUT/boundary.txt" \
  2>/dev/null || true
"$PY" scripts/plot_reference.py "$OUT" --out bench/results/olmo_core_reference_demo.png
tail -n 3 "$OUT/compare1.txt" "$OUT/compare2.txt" "$OUT/boundary.txt"
