#!/usr/bin/env bash
# Issue 3: the tokenizer must equal tiktoken on every document of the prepared corpus.
# Builds the demo corpus if it is not there yet (scripts/make_demo_data.sh is idempotent:
# apt-get download of the Debian packages, ~90 MB, about 1-2 minutes), then checks every
# document of every corpus JSONL file (train shards, val_id, val_ood_gcide, canaries included)
# against PyPI tiktoken with tests/tokenizer/tokenizer_parity.py --jsonl.
set -euo pipefail
src=${OLMO_SOURCE_DIR:?}
cd "$src"
BUILD="$OLMO_BINARY_DIR" bash scripts/make_demo_data.sh > /dev/null
mapfile -t files < <(ls data/corpus/train/*.jsonl* data/corpus/val_id.jsonl* data/corpus/val_ood_gcide.jsonl*)
[ "${#files[@]}" -ge 3 ] || { echo "corpus files missing under data/corpus" >&2; exit 1; }
exec "$OLMO_PYTHON" tests/tokenizer/tokenizer_parity.py --jsonl "${files[@]}"
