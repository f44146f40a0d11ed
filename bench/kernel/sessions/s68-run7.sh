#!/usr/bin/env bash
# Session 68, run 7 (nvidia-h200): the read forms' self-check (CheckPlainReads: each form's XOR of
# random spans of uneven sizes against the host's) on the final binary, and on a binary built with
# a deliberate fault (the ld.global.nc read skips its last 16 bytes; prefixd_kernel_bench_fault),
# which must fail it; then a few grid shapes with the read floors.
#   CARRY=.carry/s68e bash bench/kernel/sessions/s68-run7.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s68-run7
ARGS="--heads 32/8 -b 16,64 -p 1024,8192 -s 32,256 --no-baseline --no-graph -c 1 --read-floor --settle-ms 200"
timeout 120 /tmp/b/prefixd_kernel_bench_fault $ARGS >"$OUT/fault.txt" 2>&1
echo "fault binary rc=$? (must be non-zero): $(grep -o 'plain read .*' "$OUT/fault.txt" | head -1)"
timeout 120 $B $ARGS --csv "$OUT/final.csv" >"$OUT/final.txt" 2>&1
echo "final binary rc=$?: $(grep 'read floors' "$OUT/final.txt")"
awk -F, 'NR>1 {printf "%s %s/%s B%s P%s S%s total %.1f read %.1f pair %.1f prefix-read %.1f suffix-read %.1f\n",$1,$3,$4,$6,$7,$8,$16,$32,$34,$35,$36}' "$OUT/final.csv"
pack_logs
