#!/usr/bin/env bash
# Session 64, run 2 (nvidia-h200): CTA pairs again after run 1's +40% prefix parts, with the peer's
# arrival at the default (CTA-scope release) semantics instead of .release.cluster and the own
# CTA's arrival local; paired launches only where the device holds every pair at once (printed in
# the rows' notes). The CtaPairs test and both sanitizers, then the default against the pairs
# interleaved per shape in one process, twice.
#   CARRY=.carry/s64b bash bench/kernel/s64-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/kernel/device-setup.sh s64-run2
GPU_TESTS_TIMEOUT=60 run_gpu_tests '*CtaPairs*'
run_sanitizers '*CtaPairs*'
P=PREFIXD_SM90A_CTA_PAIRS=1
for i in 1 2; do
  RUN_TIMEOUT=120 run_variants pairs$i "default,$P" -d 128 --heads 32/32,32/8 -b 64,256 -p 8192,32768 -s 32,256 --dtype fp16,bf16
done
echo "== rows that ran CTA pairs (pairs1)"; grep "cta-pairs" "$OUT/pairs1.txt" | awk '{print $1, $3, "D" $4, "B" $5, "P" $6, "S" $7}' | head -4
grep -o "cta-pairs([0-9]* resident)" "$OUT/pairs1.txt" | sort | uniq -c
SHOW_LINES=70 show_variants pairs1 pairs2 | grep -v "^#$" | grep -v "32/32 D128 B64" | cut -c1-120
pack_logs
