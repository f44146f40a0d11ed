#!/usr/bin/env bash
# Session 89, run 11: run 10's planner check again on the final model (the TMA decode's bytes at
# head_dim 64 bounded by the most measured there, concurrent_tma_d64_gbs = 2100: run 10's model took
# k = 64 and 48 at 32/8 D64 B256 P8192 S512 and S256, 7.5% over the cascade and 18% over k = 36),
# this tree's binary only; on an H200 first the grid (run_bar_grid).
# Carry .carry/s89e (ignored, local): this tree's prefixd_kernel_bench:
#   mkdir -p .carry/s89e && tar -C build -cf - --transform 's,.*/,./,' bench/prefixd_kernel_bench \
#     | xz -6 -T2 > .carry/s89e/bins.tar.xz
#   CARRY=.carry/s89e bash bench/kernel/sessions/s89-run11.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s89-run11
run_bar_grid
sets=("fp16 -d 64 --heads 32/8 -b 128,256 -p 8192,32768 -s 128,256,512"
      "fp16 -d 64 --heads 64/8,32/4 -b 256 -p 32768 -s 128,512"
      "bf16 -d 64 --heads 32/8 -b 256 -p 8192,32768 -s 256")
i=0
for s in "${sets[@]}"; do
  i=$((i + 1))
  run_planner_set check$i "$B" "$s"
done
pack_logs
