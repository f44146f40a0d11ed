#!/usr/bin/env bash
# Session 49, run 5 (nvidia-h200): the final binaries (run 4's) once more.
#   1. the whole GPU suite (launch/gpu-check.sh, no sanitizers: run 2 ran them on the merge kernel,
#      and the planner change after it is CPU code);
#   2. what slows the concurrent step's prefix beside the decode (~15 µs in session 48's trace; the
#      L2 policies of run 1 changed nothing): 32/8 D128 B256 P32768 S256 fp16, the planner's k = 20
#      with the persistent TMA decode, against the decode's diagnostics (PREFIXD_DECODE_TMA_DIAG,
#      WRONG results on purpose): 1 = its copies only (the bytes, no arithmetic), 2 = its arithmetic
#      only (no bytes). The step is the prefix's end + the merge wherever the decode ends first.
#   CARRY=.carry/s49c bash bench/kernel/sessions/s49-last.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s49-last
OUT=$OUT/check PREFIXD_BIN_DIR=/tmp/b PREFIXD_SKIP_CPU_TESTS=1 PREFIXD_SKIP_BENCH=1 PREFIXD_SKIP_SANITIZER=1 \
  PREFIXD_TIMEOUT_TESTS=250 bash launch/gpu-check.sh 2>&1 | tail -5
grep -hE "^\[  FAILED  \]" "$OUT"/check/*.log | sort -u | head -10
RUN_TIMEOUT=60 run_variants diag default,PREFIXD_DECODE_TMA_DIAG=1,PREFIXD_DECODE_TMA_DIAG=2 -d 128 --heads 32/8 \
  -b 256 -p 32768 -s 256 --dtype fp16
show_parts diag
pack_logs
