#!/usr/bin/env bash
# Session 47, run 3 (nvidia-h200): the concurrent mode's merge launched as a programmatic dependent
# of the prefix kernel (the join with the decode stream kept as a full dependency), against the
# normal launch (PREFIXD_MERGE_PDL=0): the concurrent and graph GPU tests, then 32/8 B256 P32768 S256
# fp16 and bf16 at head_dim 128 (k = 20, default and persistent TMA decode) and 256 (k = 28).
#   CARRY=.carry/s47c bash bench/kernel/sessions/s47-merge-pdl.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s47-merge-pdl
GPU_TESTS_TIMEOUT=240 run_gpu_tests 'CudaConcurrentCascade*:*CudaConcurrentCascadeTest*:CudaGraph.Concurrent*'
grep -E '^\[  FAILED' "$OUT/tests.log" | head -20
C=PREFIXD_CONCURRENT_DECODE_SMS OFF=PREFIXD_MERGE_PDL=0 PT=PREFIXD_DECODE_PERSISTENT=1+PREFIXD_DECODE_TMA=1
RUN_TIMEOUT=200 run_variants d128 "default,$C=20,$C=20+$OFF,$C=20+$PT,$C=20+$PT+$OFF" \
  -d 128 --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16,bf16
RUN_TIMEOUT=200 run_variants d256 "default,$C=28,$C=28+$OFF" -d 256 --heads 32/8,32/32 -b 256 -p 32768 -s 256 --dtype fp16
echo "== prefix / suffix / merge / total us, wrong"
for n in d128 d256; do
  awk -F, 'NR>1 {printf "%s %s/%s D%s S%s %-62s %7.1f %7.1f %6.1f %7.1f %s\n",$1,$3,$4,$5,$8,$NF,$13,$14,$15,$16,$31}' "$OUT/$n.csv"
done
pack_logs
