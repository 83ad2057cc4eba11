#!/usr/bin/env bash
# OLMo 3 in-loop downstream tasks: `olmo evaluate` vs the reference scorer (ai2-olmo-eval 0.9.0
# build_task + ICLMetric over transformers, fp32) on the same random-init tiny OLMo 3 (dolma2
# vocab 100352), the first DOCS documents of every "fast" task, model context CTX. Both sides
# use THREADS threads (OMP_WAIT_POLICY=passive: the machine is shared; active spinning under
# oversubscription costs us 10x). Runs tests/eval/olmo_eval_parity.py (every per-document
# prediction equal, every metric within 1e-5 rel.) and writes bench/results/olmo_eval.md.
# Usage: bench/olmo_eval_bench.sh [DOCS=30] [CTX=2048] [THREADS=2]
set -euo pipefail
cd "$(dirname "$0")/.."
DOCS=${1:-30}
CTX=${2:-2048}
THREADS=${3:-2}
OUT=bench/results/olmo_eval.md
LOG=$(mktemp)
export OLMO_SOURCE_DIR=$PWD OLMO_BIN=$PWD/build/olmo OLMO_EVAL_PARITY_TASKS=fast
export OLMO_EVAL_PARITY_DOCS=$DOCS OLMO_EVAL_PARITY_CTX=$CTX OMP_NUM_THREADS=$THREADS
export OMP_WAIT_POLICY=passive TIKTOKEN_CACHE_DIR=$PWD/data/tiktoken_cache
START=$(date -u +%FT%TZ)
PYTHONPATH=tests/lib .venv/bin/python tests/eval/olmo_eval_parity.py 2>&1 | grep -vE "Warn|CUDA_HOME|transformer_engine|Loading weights" | tee "$LOG"
{
  echo "# OLMo 3 downstream tasks: olmo evaluate vs ai2-olmo-eval's ICLMetric"
  echo
  echo "Command: \`bench/olmo_eval_bench.sh $DOCS $CTX $THREADS\` (started $START, commit"
  echo "$(git rev-parse --short HEAD)); machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'),"
  echo "shared with other jobs (load average at the end: $(cut -d' ' -f1-3 /proc/loadavg))."
  echo
  echo "Model: tests/configs/tiny.yaml with model.vocab_size=100352, data.seq_len=$CTX (random init, seed 5,"
  echo "\`olmo export\`), fp32 on both sides. Tasks: the 26 labels of \"fast\", the $DOCS documents with"
  echo "the smallest doc_id of each; model context $CTX. Reference: build_task + collate_fn (batch of 1,"
  echo "padded to a multiple of 128) + Olmo3ForCausalLM + ICLMetric.update/compute, torch threads"
  echo "$THREADS. Wall times include loading and tokenizing on both sides."
  echo
  echo '```'
  cat "$LOG"
  echo '```'
  echo
  echo "Where the time goes: the reference runs every row (one per choice for rc tasks) as a full"
  echo "padded sequence and computes the logits of every position; ours runs each document's"
  echo "context once (KV-cache prefill), continues every choice from a copy of that cache, and runs"
  echo "bpb rows as one forward with the LM head on the continuation positions only."
} > "$OUT"
rm -f "$LOG"
echo "wrote $OUT"
