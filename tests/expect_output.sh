#!/usr/bin/env bash
# Runs a CLI command for a ctest check of its exit status AND its message (PASS_REGULAR_EXPRESSION
# alone makes ctest ignore the status, so an error path that printed the message and exited 0
# would pass).
#   tests/expect_output.sh WANT REGEX CMD [ARGS...]
#   WANT   0      the command must succeed
#          error  it must fail cleanly: status 1..125 (not 0, not a signal or a shell error)
#   REGEX  extended regex (grep -E) that stdout+stderr must match
# Prints the command's output, then what was checked; exit 0 on pass, 1 otherwise.
set -u
want=$1 re=$2
shift 2
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
ok_rc=0
case $want in
  0) [ "$rc" -eq 0 ] && ok_rc=1 ;;
  error) [ "$rc" -ge 1 ] && [ "$rc" -le 125 ] && ok_rc=1 ;;
  *) echo "expect_output.sh: WANT must be 0 or error, not '$want'"; exit 1 ;;
esac
if [ "$ok_rc" -ne 1 ]; then
  echo "FAIL: exit status $rc, want $want"
  exit 1
fi
if ! printf '%s\n' "$out" | grep -Eq -- "$re"; then
  echo "FAIL: output does not match /$re/"
  exit 1
fi
echo "ok: exit status $rc ($want) and output matches /$re/"
