#!/usr/bin/env bash
# Session 72, run 9 (nvidia-h200; not run in session 72 for lack of device time; run in session 73 as
# bench/kernel/sessions/s73-run1.sh, part 1: the hint is right at P32768 too): run 8 found the evict-first hint 3.2 µs faster for a 128 MiB bulk
# read after the write flush but 5.3 µs slower at 512 MiB (4 × L2 and more: the dirty lines it spares
# are evicted anyway). The plan streams every memory-bound prefix evict-first (PrefixKvEvictFirst:
# few rows per KV head, a decode of at most 3 × L2), whatever the prefix's own bytes. The default
# against the hint off (PREFIXD_SM90A_KV_POLICY=normal), interleaved per shape, fp16, twice (order swapped): GQA-1
# B16-64 at P8192 (134 MB of prefix K/V) and P32768 (537 MB).
#   CARRY=.carry/s72h bash bench/kernel/sessions/s72-run9.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s72-run9
RUN_TIMEOUT=100 run_variants evict1 "default,PREFIXD_SM90A_KV_POLICY=normal" --heads 32/32 -b 16,64 -p 8192,32768 -s 32,256 --dtype fp16
RUN_TIMEOUT=100 run_variants evict2 "PREFIXD_SM90A_KV_POLICY=normal,default" --heads 32/32 -b 16,64 -p 8192,32768 -s 32,256 --dtype fp16
show_parts evict1 evict2
pack_logs
