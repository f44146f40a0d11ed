#!/usr/bin/env bash
# Session 90, run 2: on the bar's card (an H200) first the concurrent step's k forced at the headline
# shape (32/8 B256 P32768 S256, fp16 and bf16; k = 10-24 against the default), then the bar's item for
# the tests — the whole
# GPU suite (12 shards) with compute-sanitizer's memcheck and racecheck lists — and the planner
# checks on and off the grid (run_offgrid_planner_checks), on 4f7505e's binaries (run 1's).
# Carry .carry/s90a (ignored, local): prefixd_kernel_bench, prefixd_gpu_tests, prefixd of 4f7505e:
#   mkdir -p .carry/s90a && tar -C build -cf - --transform 's,.*/,./,' bench/prefixd_kernel_bench \
#     tests/prefixd_gpu_tests launch/prefixd | xz -6 -T2 > .carry/s90a/bins.tar.xz
#   CARRY=.carry/s90a bash bench/kernel/sessions/s90-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s90-run2
V=default
for k in 10 12 14 16 18 20 24; do V=$V,PREFIXD_CONCURRENT_DECODE_SMS=$k+PREFIXD_CONCURRENT_DECODE_TMA=force; done
run_variants kscan-fp16 "$V" --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16
run_variants kscan-bf16 "$V" --heads 32/8 -b 256 -p 32768 -s 256 --dtype bf16
show_variants kscan-fp16 kscan-bf16
PREFIXD_TEST_SHARDS=12 PREFIXD_TIMEOUT_TESTS=240 run_whole_suite
run_offgrid_planner_checks
pack_logs
