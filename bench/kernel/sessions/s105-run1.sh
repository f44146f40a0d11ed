#!/usr/bin/env bash
# Not run: no machine could be started in session 105.
# Session 105, run 1, on .carry/s104c (b220d78's binaries; the kernels are HEAD's: c4340f6 only
# refactored MergeHalfWarpRowsKernel's whole-warp exit, same registers), asked for as nvidia-h200
# or nvidia-h100-x1, whichever is lent. s104-run3.sh trimmed to the device time left this session
# (~670 s before the start): the most needed first, each later part gated on the time used.
# - the merge and 16-bit GPU tests (MergeHalfWarpRowsKernel's among them, never yet run on a GPU)
#   and the empty-request tests (refactored in session 103);
# - the A/B in one process, PREFIXD_MERGE_HALF_WARP=1 against the default (the one-warp kernels),
#   both orders, at the headline row 32/8 B256 P32768 S256 fp16 and bf16 (on an H200 these are the
#   headline bar item's figures too);
# - memcheck on the new tests;
# - on an H200, while under 200 s, the bar grid (and its head_dim rows) on the default (off).
#   CARRY=.carry/s104c bash bench/kernel/sessions/s105-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s105-run1
run_gpu_tests 'CudaMergeStates*:CudaConcurrentCascade.HalfWarp*:CudaConcurrentCascade.TheStatesIn16Bits*'\
':CudaCascade.*Empty*'
run_headline_ab PREFIXD_MERGE_HALF_WARP=1
MEMCHECK_TIMEOUT=60 run_memcheck 'CudaMergeStates.HalfWarp*:CudaConcurrentCascade.HalfWarp*'
if on_h200 && [ "$SECONDS" -lt 200 ]; then run_bar_grid; else echo "no grid (not an H200, or ${SECONDS} s used)"; fi
echo "elapsed ${SECONDS} s"
pack_logs
