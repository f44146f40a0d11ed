#!/usr/bin/env bash
# Session 45, run 7 (nvidia-h200): the prefix and the decode side by side on disjoint SMs, the
# prefix balanced over the SMs the decode leaves by the stream over the heads (prefix_balance.h,
# PlanOptions::balance_stream, on by default with PREFIXD_CONCURRENT_DECODE_SMS): does a compute-
# bound prefix beside a memory-bound decode beat the two-kernel cascade, and at which k?
#   1. the kernel benchmark, 32/8 B256 P32768 S32 / S256 at head_dim 64 / 128 / 256 and 32/8 D128
#      B64 / B256 P8192 / P32768 S256, fp16: default against the decode on k SMs (the default
#      decode kernel, and the persistent one with TMA copies, which runs head_dim 64 and 128 only);
#   2. the GPU tests of the balanced grids (the stream's among them) and the concurrent backend,
#      memcheck on the balanced grids.
#   CARRY=.carry/s45c bash bench/kernel/sessions/s45-stream.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s45-stream
C=PREFIXD_CONCURRENT_DECODE_SMS
PT=PREFIXD_DECODE_PERSISTENT=1+PREFIXD_DECODE_TMA=1
V="default,$C=20,$C=28,$C=16+$PT,$C=20+$PT,$C=24+$PT,$C=28+$PT,$C=32+$PT"
RUN_TIMEOUT=250 run_variants conc-dims "$V" -d 64,128,256 --heads 32/8 -b 256 -p 32768 -s 32,256 --dtype fp16
RUN_TIMEOUT=200 run_variants conc-grid "$V" --heads 32/8 -b 64,256 -p 8192,32768 -s 256 --dtype fp16
for n in conc-dims conc-grid; do
  echo "== $n: prefix / suffix / merge / total us, wrong"
  awk -F, 'NR>1 {printf "D%s B%s P%s S%s %-60s %7.1f %7.1f %6.1f %7.1f %s\n",$5,$6,$7,$8,$NF,$13,$14,$15,$16,$31}' "$OUT/$n.csv"
done
GPU_TESTS_TIMEOUT=200 run_gpu_tests '*Balanced*:CudaConcurrentCascade*:*ConcurrentDecode*'
grep -E '^\[  FAILED' "$OUT/tests.log" | head -20
run_sanitizers '*BalancedPrefixGrid*'
pack_logs
