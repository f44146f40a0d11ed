#!/usr/bin/env bash
# Session 101, run 3, on .carry/s101a (HEAD's binaries), asked for as nvidia-h200 (H100 or H200).
# (1) On an H200 (the bar's card): the bar grid and head_dim rows and the headline's k scan; no
# planner checks (PLANNER_BEFORE_S=0: the session's device time is short). (2) On an H100: the
# planner check where session 100's 8-warp TMA-decode candidate can arise but was never timed:
# head_dim 64 at 32/8 and GQA 8 (64/8) at head_dim 128, B128/256, P8192/32768, S256/512, fp16 and
# bf16 (16 shapes each): the measured choice against plain decode and min(cascade, plain).
#   CARRY=.carry/s101a bash bench/kernel/sessions/s101-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s101-run3
if on_h200; then
  PLANNER_BEFORE_S=0 run_h200_bar_checks
else
  for dt in fp16 bf16; do
    for hd in 32/8:64 64/8:128; do
      name=planner-$dt-${hd%%/*}-${hd##*:}
      timeout 55 $B --planner-check --dtype $dt --heads ${hd%%:*} -d ${hd##*:} -b 128,256 -p 8192,32768 -s 256,512 \
        >"$OUT/$name.txt" 2>&1
      echo "== $name rc=$? $(grep -cE '^ +(fp16|bf16) ' "$OUT/$name.txt") shapes"
      grep -E "planner check:|measured choice" "$OUT/$name.txt" | grep -v "must be"
      grep -E '^ +(fp16|bf16) ' "$OUT/$name.txt" | grep -E "tma-8-warps|SLOW|WRONG" | cut -c1-200 | head -12
    done
  done
fi
echo "elapsed ${SECONDS} s"
pack_logs
