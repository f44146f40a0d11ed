#!/usr/bin/env bash
# Session 98, run 4: s98-run3.sh cut down again (~325 s of device time left after seven failed
# starts), on .carry/s98a (its tar lines are in s98-run2.sh's header): the new tests with every
# concurrent GPU test, the setting's A/B in one process at 32/8 B256 P8192-32768 S256 (fp16, bf16),
# then, while $SECONDS is below 110, the default against the build before at 32/8 B256 P32768 S256
# head_dim 128 (fp16), old new old new.
#   CARRY=.carry/s98a bash bench/kernel/sessions/s98-run4.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s98-run4
GPU_TESTS_TIMEOUT=70 run_gpu_tests 'CudaConcurrentCascade.*:*SixteenBitValues*'
RUN_TIMEOUT=70 run_variants s16 "default,PREFIXD_CONCURRENT_STATES16=1" --heads 32/8 -b 256 -p 8192,32768 -s 256 \
  --dtype fp16,bf16
SHOW_LINES=12 show_variants s16
[ "$SECONDS" -lt 110 ] &&
  run_bench_ab "$OUT/ab" --heads 32/8 -d 128 -b 256 -p 32768 -s 256 --dtype fp16 --no-baseline --no-graph -c 1
echo "elapsed ${SECONDS} s"
pack_logs
