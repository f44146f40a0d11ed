#!/usr/bin/env bash
# Session 49, run 2 (nvidia-h200): the merge kernel two rows per warp (MergeShortRunsKernel: runs
# of at most 4 states at head_dim ≤ 128, by default where one row per warp takes more than one wave
# of resident warps), and the concurrent mode at P16384.
#   1. launch/gpu-check.sh: the whole GPU suite (new: CudaMergeStates.TwoRowsPerWarpGiveTheBitsOfOne,
#      merge cases of 8999-20000 rows), memcheck, racecheck; then both sanitizers on the merge tests;
#   2. the default (two rows per warp where it applies) against PREFIXD_MERGE_ROWS_PER_WARP=1, each
#      shape timed once per variant in turn: the concurrent step (the planner's k) of 32/8 B256
#      P32768 S256 D128 fp16 / bf16 and D256 fp16; the sequential step with every request through
#      the merge kernel (PREFIXD_CONCURRENT_DECODE_SMS=0, --no-fuse), 32/8 and 32/32 B256 P8192 /
#      P32768 S256 fp16;
#   3. P16384, where the planner keeps the step sequential (B128 / B256, S256 / S512, 32/8 D128
#      fp16): the default against the concurrent mode forced at k = 20, with the one-CTA-per-item
#      decode and with the persistent TMA decode.
#   CARRY=.carry/s49b bash bench/kernel/sessions/s49-merge.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s49-merge
OUT=$OUT/check PREFIXD_BIN_DIR=/tmp/b PREFIXD_SKIP_CPU_TESTS=1 PREFIXD_SKIP_BENCH=1 PREFIXD_TIMEOUT_TESTS=300 \
  bash launch/gpu-check.sh 2>&1 | tail -7
grep -hE "^\[  FAILED  \]" "$OUT"/check/*.log | sort -u | head -10
run_sanitizers '*MergeStates*'

V=default,PREFIXD_MERGE_ROWS_PER_WARP=1
RUN_TIMEOUT=120 run_variants conc "$V" -d 128 --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16,bf16
RUN_TIMEOUT=100 run_variants conc256 "$V" -d 256 --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16
PREFIXD_CONCURRENT_DECODE_SMS=0 RUN_TIMEOUT=150 run_variants seq "$V" -d 128 --heads 32/8,32/32 -b 256 \
  -p 8192,32768 -s 256 --dtype fp16 --no-fuse
C=PREFIXD_CONCURRENT_DECODE_SMS=20
RUN_TIMEOUT=200 run_variants p16k "default,$C,$C+PREFIXD_DECODE_PERSISTENT=1+PREFIXD_DECODE_TMA=1" \
  -d 128 --heads 32/8 -b 128,256 -p 16384 -s 256,512 --dtype fp16
show_parts conc conc256 seq p16k
pack_logs
