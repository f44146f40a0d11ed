#!/usr/bin/env bash
# Session 47, run 1 (nvidia-h200): the concurrent mode's ⊕ by the last arrival (arrival_merge.h,
# PREFIXD_CONCURRENT_MERGE=arrival, its default) against the merge kernel after the join
# (PREFIXD_CONCURRENT_MERGE=kernel) and the default sequential step:
#   1. the concurrent, graph and fused GPU tests (the new LastArrivalMerge test among them), then
#      compute-sanitizer on the concurrent shape tests and the graph replay;
#   2. 32/32 and 32/8 B256 P32768 S32/S256, head_dim 128, fp16: default, k = 20 by kernel / by
#      arrival, k = 20 with the persistent TMA decode by kernel / by arrival;
#   3. head_dim 64 and 256 at S256: default, k = 20 and 28 by kernel / by arrival.
#   CARRY=.carry/s47a bash bench/kernel/sessions/s47-arrival.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s47-arrival
GPU_TESTS_TIMEOUT=300 run_gpu_tests 'CudaConcurrentCascade*:*CudaConcurrentCascadeTest*:CudaGraph*:*CudaFusedCascade*'
run_sanitizers '*CudaConcurrentCascadeTest*:CudaGraph.ConcurrentStep*'
C=PREFIXD_CONCURRENT_DECODE_SMS M=PREFIXD_CONCURRENT_MERGE PT=PREFIXD_DECODE_PERSISTENT=1+PREFIXD_DECODE_TMA=1
RUN_TIMEOUT=200 run_variants d128 "default,$C=20+$M=kernel,$C=20+$M=arrival,$C=20+$PT+$M=kernel,$C=20+$PT+$M=arrival" \
  -d 128 --heads 32/32,32/8 -b 256 -p 32768 -s 32,256 --dtype fp16
RUN_TIMEOUT=200 run_variants d64-256 "default,$C=20+$M=kernel,$C=20+$M=arrival,$C=28+$M=kernel,$C=28+$M=arrival" \
  -d 64,256 --heads 32/32,32/8 -b 256 -p 32768 -s 256 --dtype fp16
echo "== prefix / suffix / merge / total us, wrong"
for n in d128 d64-256; do
  awk -F, 'NR>1 {printf "%s/%s D%s S%s %-62s %7.1f %7.1f %6.1f %7.1f %s\n",$3,$4,$5,$8,$NF,$13,$14,$15,$16,$31}' "$OUT/$n.csv"
done
pack_logs
