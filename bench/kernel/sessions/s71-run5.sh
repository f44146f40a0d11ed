#!/usr/bin/env bash
# Session 71, run 5 (nvidia-h200): where the memory-bound prefix kernel's excess over a plain read of
# its bytes lies. PREFIXD_SM90A_DIAG=1 (new, WRONG results) keeps the kernel's copies, ring, turns
# and releases but drops its arithmetic and states: its prefix part against the default's and
# against --read-floor's read of the same bytes (read_prefix_us), fp16, interleaved per shape, twice
# (checks off: the diagnostic's results are wrong by design). Then this build's default path
# against session 70's kernel benchmark (the diagnostic's template must not move it).
#   CARRY=.carry/s71d bash bench/kernel/sessions/s71-run5.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s71-run5
for i in 1 2; do
  RUN_TIMEOUT=150 run_variants diag$i "default,PREFIXD_SM90A_DIAG=1" --heads 32/32,32/8 -b 16,64 -p 8192,32768 -s 32 \
    --dtype fp16 --read-floor -c 0
  awk -F, 'NR>1 {printf "%s/%s B%s P%s %-22s prefix %6.1f  read of its bytes %6.1f\n", $3, $4, $6, $7, $NF, $13, $35}' \
    "$OUT/diag$i.csv"
done
run_bench_ab "$OUT/ab" --heads 32/32,32/8 -b 16,256 -p 8192,32768 -s 32 --dtype fp16 --no-baseline --no-graph -c 1
pack_logs
