#!/usr/bin/env bash
# Session 94, run 1, on b907c39's binaries (.carry/s93a; HEAD's kernels: c4ddc91 changed no ptxas -v).
# On an H200 first the grid and head_dim rows (run_bar_grid): the bar's figures with the chained
# concurrent step (the default since session 92), never timed on an H200; then the concurrent
# step's k forced at the headline shape (32/8 B256 P32768 S256, fp16 and bf16, k = 12-20 against the
# default), as session 90 run 2 did for the unchained step.
#   mkdir -p .carry/s93a && tar -C build -cf - --transform 's,.*/,./,' bench/prefixd_kernel_bench \
#     tests/prefixd_gpu_tests launch/prefixd | xz -6 -T4 > .carry/s93a/bins.tar.xz   # built at b907c39
#   CARRY=.carry/s93a bash bench/kernel/sessions/s94-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s94-run1
run_bar_grid
V=default
for k in 12 14 16 18 20; do V=$V,PREFIXD_CONCURRENT_DECODE_SMS=$k+PREFIXD_CONCURRENT_DECODE_TMA=force; done
RUN_TIMEOUT=100 run_variants kscan-fp16 "$V" --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16
RUN_TIMEOUT=100 run_variants kscan-bf16 "$V" --heads 32/8 -b 256 -p 32768 -s 256 --dtype bf16
show_variants kscan-fp16 kscan-bf16
pack_logs
