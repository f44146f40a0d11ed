#!/usr/bin/env bash
# Run in session 106 (call 1, an H100, 31 s): tests 9 passed; the A/B found no gain (RESULTS s106).
# Not run in session 105 either: every start failed.
# Session 104, run 3 (not run in session 104: no device was lent), on .carry/s104c (the binaries of
# the commit that added this script: the concurrent step's 16-bit states merged a half-warp per row,
# MergeHalfWarpRowsKernel, built but off by default, PREFIXD_MERGE_HALF_WARP=0), asked for as
# nvidia-h200, any card:
# - the merge and 16-bit GPU tests (the new HalfWarpRowsGiveTheBitsOfTheWarpKernels and
#   HalfWarpMergeGivesTheBitsOfTheWarpMerge among them) and the empty-request tests (refactored in
#   session 103, not yet run on a GPU);
# - the A/B in one process, PREFIXD_MERGE_HALF_WARP=1 against the default (the one-warp kernels),
#   both orders, at the headline row 32/8 B256 P32768 S256 fp16 and bf16;
# - on an H200 only, the bar checks (grid, head_dim rows, headline k scan) on the default (off);
# - while time is left, the A/B at 32/8 D64/D128 B128/B256 P8192/P32768 S256 fp16 (the model's
#   plan, the same for both), then memcheck on the new tests.
#   ninja -C build -j3 bench/prefixd_kernel_bench tests/prefixd_gpu_tests launch/prefixd && \
#     mkdir -p /tmp/carry104c .carry/s104c && cp build/bench/prefixd_kernel_bench \
#     build/tests/prefixd_gpu_tests build/launch/prefixd /tmp/carry104c/ && \
#     tar -C /tmp/carry104c -cf - . | xz -6 -T2 > .carry/s104c/bins.tar.xz
#   CARRY=.carry/s104c bash bench/kernel/sessions/s104-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s104-run3
run_gpu_tests 'CudaMergeStates*:CudaConcurrentCascade.HalfWarp*:CudaConcurrentCascade.TheStatesIn16Bits*'\
':CudaCascade.*Empty*'
run_headline_ab PREFIXD_MERGE_HALF_WARP=1
if on_h200; then PLANNER_BEFORE_S=0 run_h200_bar_checks; else echo "not an H200: no bar checks"; fi
if [ "$SECONDS" -lt 330 ]; then
  RUN_TIMEOUT=120 run_variants spread-ab PREFIXD_MERGE_HALF_WARP=1,default --heads 32/8 -d 64,128 -b 128,256 \
    -p 8192,32768 -s 256 --dtype fp16
  SHOW_LINES=24 show_variants spread-ab
fi
[ "$SECONDS" -lt 400 ] && MEMCHECK_TIMEOUT=60 run_memcheck 'CudaMergeStates.HalfWarp*:CudaConcurrentCascade.HalfWarp*'
echo "elapsed ${SECONDS} s"
pack_logs
