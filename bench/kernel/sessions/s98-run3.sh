#!/usr/bin/env bash
# Session 98, run 3: s98-run2.sh cut down to ~250 s for the device time left after five failed
# starts, on the same carry (.carry/s98a; its tar lines are in s98-run2.sh's header). The two new
# tests with the concurrent and merge GPU tests; memcheck on the new ones; the setting's A/B in one
# process at 32/8 B256 P8192-32768 S256 (fp16, bf16); the default against the build before at the
# B256 P32768 S256 rows of head_dim 128 and 256 (fp16), old new old new.
#   CARRY=.carry/s98a bash bench/kernel/sessions/s98-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s98-run3
GPU_TESTS_TIMEOUT=120 run_gpu_tests 'CudaConcurrentCascade.*:CudaMergeStates*'
MEMCHECK_TIMEOUT=60 run_memcheck '*StatesIn16Bits*:*SixteenBitValues*'
RUN_TIMEOUT=80 run_variants s16 "default,PREFIXD_CONCURRENT_STATES16=1" --heads 32/8 -b 256 -p 8192,32768 -s 256 \
  --dtype fp16,bf16
SHOW_LINES=12 show_variants s16
run_bench_ab "$OUT/ab" --heads 32/8 -d 128,256 -b 256 -p 32768 -s 256 --dtype fp16 --no-baseline --no-graph -c 1
echo "elapsed ${SECONDS} s"
pack_logs
