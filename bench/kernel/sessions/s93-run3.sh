#!/usr/bin/env bash
# Session 93, run 3, on 1b4e96c's binaries (.carry/s93c: the finishing step, off by default, since
# reverted in 9651b71; its code is bench/kernel/results/s93/finish-in-kernels.patch; with it off
# every kernel and launch is HEAD's: ptxas -v identical, the backend's default path unchanged).
# (1) On an H200 first the grid and head_dim rows (run_bar_grid): the bar's figures with the
# chained step, the default since session 92, never timed on an H200. (2) Where
# the finishing step's time went: run 2 had it 9-25 µs slower than the chained step with the merge
# kernel at every prefix-bound shape. The A/B again with the arrivals alone
# (PREFIXD_CONCURRENT_FINISH_DIAG=1: counted, never merged; wrong results) beside the default and
# the finishing step, at 32/8 B128 / B256 P8192 / P32768 S256 (fp16).
#   mkdir -p .carry/s93c && tar -C build -cf - --transform 's,.*/,./,' bench/prefixd_kernel_bench \
#     tests/prefixd_gpu_tests launch/prefixd | xz -6 -T8 > .carry/s93c/bins.tar.xz   # built at 1b4e96c
#   CARRY=.carry/s93c bash bench/kernel/sessions/s93-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s93-run3
run_bar_grid
F=PREFIXD_CONCURRENT_FINISH=1
RUN_TIMEOUT=150 run_variants ab3 "default,$F,$F+PREFIXD_CONCURRENT_FINISH_DIAG=1" \
  --heads 32/8 -b 128,256 -p 8192,32768 -s 256 --dtype fp16
SHOW_LINES=30 show_variants ab3
pack_logs
