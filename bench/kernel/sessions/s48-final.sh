#!/usr/bin/env bash
# Session 48, runs 2-3 (nvidia-h200): the merge kernel in few waves (64 registers, 8 blocks per SM)
# and the planner's TMA decode for the concurrent step (CascadePlan::concurrent_decode_tma).
# Binaries carried as $CARRY/bins.tar.xz; HEAD's kernel benchmark before the change as
# prefixd_kernel_bench_old in it.
# PART=2: launch/gpu-check.sh (the whole GPU suite, memcheck, racecheck), then the merge kernel, old
#   build against new, alternated twice (run_bench_ab), on plans the change leaves alone (the
#   sequential planner, --no-fuse: every request through the merge kernel): 32/8 and 32/32 D128
#   B64 / B256, P8192 / P32768, S256, fp16; the merge part timed alone and the step.
# PART=3: the planner's choices, the default against PREFIXD_CONCURRENT_DECODE_TMA=0 (the planner
#   without the TMA candidate) and, at P16384, PREFIXD_CONCURRENT_DECODE_SMS=0 (sequential), each
#   shape timed once per variant in turn: 32/8 D128 fp16 B128 / B256 × P16384 / P32768 × S128-512,
#   B256 P65536 S384 / S512, and 32/8 B256 P32768 S256 bf16.
#   CARRY=.carry/s48b PART=2 bash bench/kernel/sessions/s48-final.sh; CARRY=.carry/s48b PART=3 ...
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s48-final
PART=${PART:?set PART to 2 or 3}
if [ "$PART" = 2 ]; then
  OUT=$OUT/check PREFIXD_BIN_DIR=/tmp/b PREFIXD_SKIP_CPU_TESTS=1 PREFIXD_SKIP_BENCH=1 PREFIXD_TIMEOUT_TESTS=300 \
    bash launch/gpu-check.sh 2>&1 | tail -7
  PREFIXD_CONCURRENT_DECODE_SMS=0 run_bench_ab "$OUT/merge" -d 128 --heads 32/8,32/32 -b 64,256 -p 8192,32768 -s 256 \
    --dtype fp16 --no-fuse --no-baseline --no-graph -c 1
  echo "== merge part alone / step, us (old new old new)"
  for n in old1 new1 old2 new2; do
    awk -F, -v n=$n 'NR>1 {printf "%s %s/%s B%s P%s S%s merge %5.1f total %6.1f wrong %s\n",n,$3,$4,$6,$7,$8,$15,$16,$31}' "$OUT/merge/$n.csv"
  done | sort -k2,5 -s
fi
if [ "$PART" = 3 ]; then
  # P16384: shapes the planner gives the concurrent mode only since the rate's refit (50 GB/s per
  # SM, was 40): against sequential too. P32768-65536: the TMA decode's choice against the mode
  # with the other decode. Then the headline shape in bf16.
  RUN_TIMEOUT=200 run_variants p16k default,PREFIXD_CONCURRENT_DECODE_TMA=0,PREFIXD_CONCURRENT_DECODE_SMS=0 \
    -d 128 --heads 32/8 -b 128,256 -p 16384 -s 128,256,384,512 --dtype fp16
  RUN_TIMEOUT=200 run_variants p32k default,PREFIXD_CONCURRENT_DECODE_TMA=0 \
    -d 128 --heads 32/8 -b 128,256 -p 32768 -s 128,256,384,512 --dtype fp16
  RUN_TIMEOUT=100 run_variants p64k default,PREFIXD_CONCURRENT_DECODE_TMA=0 \
    -d 128 --heads 32/8 -b 256 -p 65536 -s 384,512 --dtype fp16
  RUN_TIMEOUT=60 run_variants bf16 default,PREFIXD_CONCURRENT_DECODE_TMA=0 \
    -d 128 --heads 32/8 -b 256 -p 32768 -s 256 --dtype bf16
  echo "== prefix / suffix / merge / total us, wrong, variant"
  for n in p16k p32k p64k bf16; do
    awk -F, 'NR>1 {printf "%s %s/%s D%s B%s P%s S%s %-34s %7.1f %7.1f %6.1f %7.1f %s\n",$1,$3,$4,$5,$6,$7,$8,$NF,$13,$14,$15,$16,$31}' "$OUT/$n.csv"
    grep -o "concurrent(k=[0-9]*[^)]*)" "$OUT/$n.txt" | sort | uniq -c
  done
fi
pack_logs
