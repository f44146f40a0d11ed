#!/usr/bin/env bash
# Session 55, run 8 (nvidia-h200): --beside after its review clean-up (shared-memory size asked once,
# loads parsed once): the headline concurrent shape, fp16, one process; the loads' order and clocks
# should read as in runs 6-7.
#   CARRY=.carry/s55e bash bench/kernel/sessions/s55-beside-recheck.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s55-beside-recheck
timeout 100 $B -d 128 --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16 --no-baseline --no-graph -c 1 \
  --beside none,spin,fma,dram,l2 --csv "$OUT/recheck.csv" >"$OUT/recheck.txt" 2>&1
echo "rc=$? $(grep 'wrong results' "$OUT/recheck.txt")"
grep -o "beside(k=.*" "$OUT/recheck.txt"
timeout 30 $B --beside foo >"$OUT/bad.txt" 2>&1; echo "bad load rc=$? $(tail -1 "$OUT/bad.txt")"
pack_logs
