#!/usr/bin/env bash
# Runs one failure scenario under mpirun and checks that the job ends in time, with the expected
# exit status, and that its output contains every given pattern (extended regex, case-sensitive).
#
#   run_failure_test.sh --expect zero|nonzero [--pattern REGEX]... -- MPIRUN_COMMAND...
#
# Exits 77 (skipped) when the program skips itself (status 77 and a "SKIP: reason" line).
# Fails (exit 1) if the job runs 30 s or longer (it is killed after 60 s), if the exit status is
# not the expected one, or if a pattern is missing. Prints the job's output either way.
set -u
expect=""
patterns=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --expect) expect="$2"; shift 2 ;;
    --pattern) patterns+=("$2"); shift 2 ;;
    --) shift; break ;;
    *) echo "run_failure_test.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ "$expect" == zero || "$expect" == nonzero ]] || { echo "need --expect zero|nonzero" >&2; exit 2; }

log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$(date +%s.%N)
timeout --kill-after=5 60 "$@" >"$log" 2>&1
rc=$?
end=$(date +%s.%N)
elapsed=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')

echo "---- job output ----"
cat "$log"
echo "---- exit status $rc after ${elapsed} s ----"

# The program's own skip (77, "SKIP: reason"), e.g. NCCL scenarios without GPUs.
if [[ $rc -eq 77 ]] && grep -q '^SKIP: ' "$log"; then
  echo "SKIPPED"
  exit 77
fi

fail=0
if awk -v e="$elapsed" 'BEGIN { exit !(e >= 30) }'; then
  echo "FAIL: the job took ${elapsed} s (limit 30 s): a rank hung"
  fail=1
fi
# 124: timeout stopped the job. (137 is no sign of a timeout here: mpirun itself exits 137 when
# a rank died of SIGKILL; a job still running at 60 s fails the time check above anyway.)
if [[ $rc -eq 124 ]]; then
  echo "FAIL: timeout stopped the job (status $rc)"
  fail=1
elif [[ "$expect" == zero && $rc -ne 0 ]]; then
  echo "FAIL: expected exit status 0, got $rc"
  fail=1
elif [[ "$expect" == nonzero && $rc -eq 0 ]]; then
  echo "FAIL: expected a non-zero exit status, got 0"
  fail=1
fi
for p in "${patterns[@]+"${patterns[@]}"}"; do
  if ! grep -Eq -- "$p" "$log"; then
    echo "FAIL: output lacks /$p/"
    fail=1
  fi
done
[[ $fail -eq 0 ]] && echo "OK"
exit $fail
