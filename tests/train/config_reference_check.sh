#!/usr/bin/env bash
# Regenerates the config reference with the built binary and compares it with the checked-in
# docs/config.md; fails (with the diff and the command that fixes it) when they differ.
# Usage: config_reference_check.sh OLMO_BIN SOURCE_DIR
set -u
bin=$1 src=$2
want="$src/docs/config.md"
got=$(mktemp)
trap 'rm -f "$got"' EXIT
if ! "$bin" info --config-reference > "$got"; then
  echo "FAIL: '$bin info --config-reference' failed"; exit 1
fi
if [ ! -f "$want" ]; then
  echo "FAIL: $want is missing; create it with: make docs"; exit 1
fi
if ! diff -u "$want" "$got"; then
  echo "FAIL: docs/config.md is stale (the field table in src/train/config.cpp changed)."
  echo "Regenerate it with: make docs   (or: build/olmo info --config-reference > docs/config.md)"
  exit 1
fi
echo "docs/config.md matches the field table ($(grep -c '^| `' "$want") keys)"
