#!/usr/bin/env bash
# Session 100, run 3, on .carry/s100a (11d6dc3's binaries; the code after 7627a6e's revert is the
# same). On an H200 (the bar's card): the concurrent and 16-bit GPU tests, then the bar grid and
# head_dim rows with the 16-bit states the default, the headline's k scan and, while under 400 s,
# the planner checks (run_h200_bar_checks). On an H100: the concurrent step's settings with the
# 16-bit states on (their balance moved: the decode and merge now move fewer bytes), one process
# per dtype, at 32/8 D128 B128/B192/B256 P32768 S256: k = 14 and 18 forced against the model's 16,
# the merge at one and two rows per warp, the TMA decode at 8 warps, the prefix K/V hint normal.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s100-run3
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  GPU_TESTS_TIMEOUT=150 run_gpu_tests 'CudaConcurrentCascade.*:CudaMergeStates*:*SixteenBit*:*StatesIn16Bits*'
  PLANNER_BEFORE_S=400 run_h200_bar_checks
else
  v=default
  for k in 14 18; do v=$v,PREFIXD_CONCURRENT_DECODE_SMS=$k+PREFIXD_CONCURRENT_DECODE_TMA=force; done
  v=$v,PREFIXD_MERGE_ROWS_PER_WARP=1,PREFIXD_MERGE_ROWS_PER_WARP=2,PREFIXD_DECODE_TMA_WARPS=8
  v=$v,PREFIXD_SM90A_KV_POLICY=normal,default
  for dt in fp16 bf16; do
    RUN_TIMEOUT=200 run_variants "set-$dt" "$v" --heads 32/8 -b 128,192,256 -p 32768 -s 256 --dtype $dt
    SHOW_LINES=30 show_variants "set-$dt"
  done
fi
echo "elapsed ${SECONDS} s"
pack_logs
