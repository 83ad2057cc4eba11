#!/usr/bin/env bash
# Builds the demo data from nothing (called by `make corpus` / `make demo`):
#   1. data/corpus/      `olmo corpus build` (apt-get download of the Debian packages, JSONL,
#                        held-out splits, dedup, canaries, MANIFEST.json) -- skipped if it
#                        verifies and was deduplicated
#   2. data/tokens/{train,val_id,val_ood_gcide}/   `olmo prepare` (part-NNNNN.npy + .csv.gz)
#                        -- each skipped if its prepare.json is newer than the corpus MANIFEST
#                           and every file it lists is present with the listed token count
#   3. data/tokens/{train,val_id,val_ood_gcide}.mix   OLMo-core style `label,path` lines,
#                        paths relative to data/tokens
# Idempotent: rerunning after success only re-checks. Env: BUILD (default build), DATA (data),
# THREADS (nproc), GO_CAP_MB (20).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
DATA=${DATA:-data}
THREADS=${THREADS:-$(nproc)}
GO_CAP_MB=${GO_CAP_MB:-20}
OLMO="$BUILD/olmo"
CORPUS="$DATA/corpus"
TOKENS="$DATA/tokens"
T0=$(date +%s)

[ -x "$OLMO" ] || { echo "error: $OLMO not found; build first (make build)" >&2; exit 1; }
[ -f "$DATA/tokenizer/cl100k_base.tiktoken" ] || bash scripts/fetch_tokenizer.sh

# 1. corpus
# (a corpus built before deduplication existed, MANIFEST without "dedup", is rebuilt)
if "$OLMO" corpus verify "$CORPUS" >/dev/null 2>&1 && grep -q '"dedup"' "$CORPUS/MANIFEST.json"; then
  echo "[data] $CORPUS is complete (MANIFEST.json verifies); not rebuilding"
else
  echo "[data] building $CORPUS"
  "$OLMO" corpus build "$CORPUS" --go-cap-mb "$GO_CAP_MB"
  "$OLMO" corpus verify "$CORPUS"
fi

# prepared OUT: true when OUT/prepare.json is newer than the corpus and its files are complete.
prepared() {
  local out=$1
  [ -f "$out/prepare.json" ] && [ "$out/prepare.json" -nt "$CORPUS/MANIFEST.json" ] || return 1
  python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
m = json.load(open(os.path.join(out, "prepare.json")))
for f in m["files"]:
    p = os.path.join(out, f["path"])
    if not (os.path.isfile(p) and os.path.getsize(p) == 4 * f["tokens"]
            and os.path.isfile(os.path.join(out, f["index"]))):
        sys.exit(1)
PY
}

# 2. token files
prep() {  # prep NAME INPUT [extra flags]
  local name=$1 input=$2
  shift 2
  if prepared "$TOKENS/$name"; then
    echo "[data] $TOKENS/$name is up to date; not re-tokenizing"
  else
    echo "[data] tokenizing $input -> $TOKENS/$name"
    "$OLMO" prepare --out "$TOKENS/$name" --threads "$THREADS" "$@" "$input"
  fi
}
# one part file per corpus shard (all copies of a canary are in one shard: no cross-file duplicates)
prep train "$CORPUS/train" --max-tokens-per-file 8388608 --part-per-input
prep val_id "$CORPUS/val_id.jsonl"
prep val_ood_gcide "$CORPUS/val_ood_gcide.jsonl"

# 3. mix files (label,path relative to $TOKENS), written atomically
for name in train val_id val_ood_gcide; do
  tmp="$TOKENS/$name.mix.tmp.$$"
  (cd "$TOKENS" && ls "$name"/part-*.npy | sort | sed "s|^|demo-$name,|") > "$tmp"
  mv "$tmp" "$TOKENS/$name.mix"
done

python3 - "$TOKENS" <<'PY'
import json, os, sys
t = sys.argv[1]
for name in ("train", "val_id", "val_ood_gcide"):
    m = json.load(open(os.path.join(t, name, "prepare.json")))
    print(f"[data] {name:14s} {m['docs']:6d} docs {m['tokens']:10d} tokens "
          f"{m['text_bytes'] / 1e6:6.1f} MB text  {len(m['files'])} file(s)")
PY
echo "[data] mix: $TOKENS/train.mix ($(wc -l < "$TOKENS/train.mix") files); done in $(( $(date +%s) - T0 )) s"
