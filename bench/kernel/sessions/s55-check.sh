#!/usr/bin/env bash
# Session 55, run 2 (nvidia-h200): the shared swap-AB softmax with its reductions seeded by the
# first subtile (the TMA decode's PTX then has the build before's instruction count), against the
# build before (prefixd_kernel_bench_old: 133e89f's kernels), old new old new: the planner's
# concurrent TMA-decode shapes and the forced TMA decode at D64/128, S256/1024; then the whole GPU
# suite on these final binaries (8 shards; the free-SM decode test now 12 tests) and memcheck /
# racecheck on run 1's three cases.
#   CARRY=.carry/s55b bash bench/kernel/sessions/s55-check.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s55-check
run_bench_ab "$OUT/planner" -d 128 --heads 32/8 -b 128,256 -p 8192,32768 -s 256 --dtype fp16,bf16 --no-baseline --no-graph -c 1
PREFIXD_CONCURRENT_DECODE_SMS=36 PREFIXD_DECODE_PERSISTENT=1 PREFIXD_DECODE_TMA=1 \
  run_bench_ab "$OUT/forced" --head-dim 64,128 --heads 32/8 -b 64,256 -p 8192 -s 256,1024 --dtype fp16 --no-baseline --no-graph -c 1
for d in planner forced; do
  echo "== $d: suffix part alone, old1 new1 old2 new2 (us)"
  paste -d, "$OUT/$d/old1.csv" "$OUT/$d/new1.csv" "$OUT/$d/old2.csv" "$OUT/$d/new2.csv" | awk -F, -v n=32 \
    'NR>1 {printf "%s %s/%s D%s B%s P%s S%s |", $1, $3, $4, $5, $6, $7, $8; for (i = 0; i < 4; ++i) printf " %6.1f", $(i*n+14); printf "\n"}'
done
OUT=$OUT/check PREFIXD_BIN_DIR=/tmp/b PREFIXD_SKIP_CPU_TESTS=1 PREFIXD_SKIP_BENCH=1 PREFIXD_SKIP_SANITIZER=1 \
  PREFIXD_TIMEOUT_TESTS=300 PREFIXD_TEST_SHARDS=8 bash launch/gpu-check.sh 2>&1 | tail -6
grep -hE '^\[==========\].*ran|^\[  (PASSED|FAILED)' "$OUT"/check/gpu_tests.log* 2>/dev/null | sort | uniq -c | head
run_sanitizers '*CudaFusedCascadeTest*mixed_groups*:*CudaDecodeVariantTest*warps8_pdl_persistent_tma:CudaConcurrentCascade.ThePlansTmaDecodeRunsOnTheKSms'
pack_logs
