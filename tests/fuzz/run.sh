#!/usr/bin/env bash
# Runs libFuzzer targets built by `make fuzz`: run.sh BUILD_DIR SECONDS PARSER...
# Each fuzzer runs for SECONDS at nice 15 on a scratch copy of its seed corpus
# (BUILD_DIR/fuzz/work/PARSER, kept between runs, so later runs start from what earlier ones
# found); crashes land in BUILD_DIR/fuzz/artifacts/PARSER/ (add each to
# tests/fuzz/regressions/PARSER/ once fixed); the log is BUILD_DIR/fuzz/PARSER.log and the last
# status line (executions, exec/s, cov, ft) is printed at the end.
set -euo pipefail
build=$1; secs=$2; shift 2
here=$(cd "$(dirname "$0")" && pwd)
for p in "$@"; do
  bin="$build/fuzz/fuzz_$p"
  [[ -x $bin ]] || { echo "$bin: not built (make fuzz)"; exit 2; }
  work="$build/fuzz/work/$p"; art="$build/fuzz/artifacts/$p"; log="$build/fuzz/$p.log"
  mkdir -p "$work" "$art"
  start=$(date +%s)
  rc=0
  nice -n 15 "$bin" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
    -print_final_stats=1 -artifact_prefix="$art/" "$work" "$here/corpus/$p" > "$log" 2>&1 || rc=$?
  end=$(date +%s)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  echo "$p: rc=$rc wall=$((end - start))s $last"
  grep -E '^(stat::|==[0-9]+==ERROR|SUMMARY)' "$log" | head -8 || true
done
