#!/usr/bin/env bash
# Session 47, run 4 (nvidia-h200): the concurrent mode chosen by the planner (PREFIXD_CONCURRENT_DECODE_SMS
# unset: auto, the cost model's concurrent step; plan.concurrent_decode_sms) against the mode off
# (=0: the planner's sequential choice, as before), every shape the planner may choose it at and
# its neighbours; then the whole GPU suite.
#   1. B256 P32768 S256 32/8 and 32/32, head_dim 64/128/256, fp16 and bf16; S32 32/8 and 32/32
#      head_dim 128 fp16; B64 / B256 × P8192 / P32768 S256 32/8 head_dim 128 fp16; off the grid,
#      B128 / B256 × P32768 / P65536 S512 32/8 head_dim 128 fp16 (the model chooses it at three);
#   2. launch/gpu-check.sh (no benchmarks).
#   CARRY=.carry/s47d bash bench/kernel/sessions/s47-planner.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s47-planner
V=default,PREFIXD_CONCURRENT_DECODE_SMS=0
RUN_TIMEOUT=200 run_variants s256 "$V" -d 64,128,256 --heads 32/8,32/32 -b 256 -p 32768 -s 256 --dtype fp16,bf16
RUN_TIMEOUT=100 run_variants other "$V" -d 128 --heads 32/8,32/32 -b 256 -p 32768 -s 32 --dtype fp16
RUN_TIMEOUT=100 run_variants near "$V" -d 128 --heads 32/8 -b 64,256 -p 8192,32768 -s 256 --dtype fp16
RUN_TIMEOUT=120 run_variants s512 "$V" -d 128 --heads 32/8 -b 128,256 -p 32768,65536 -s 512 --dtype fp16
echo "== merged requests (all: concurrent or unfused), prefix / suffix / merge / total us, wrong"
for n in s256 other near s512; do
  awk -F, 'NR>1 {printf "%s %s/%s D%s B%s P%s S%s %-34s merged %4s %7.1f %7.1f %6.1f %7.1f %s\n",$1,$3,$4,$5,$6,$7,$8,$NF,$12,$13,$14,$15,$16,$31}' "$OUT/$n.csv"
  grep -c "concurrent(k=" "$OUT/$n.txt"
done
OUT=$OUT/check PREFIXD_BIN_DIR=/tmp/b PREFIXD_SKIP_CPU_TESTS=1 PREFIXD_SKIP_BENCH=1 PREFIXD_TIMEOUT_TESTS=300 \
  bash launch/gpu-check.sh 2>&1 | tail -8
pack_logs
