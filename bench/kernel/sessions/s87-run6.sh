#!/usr/bin/env bash
# Session 87, run 6 (nvidia-h200 asked; an H100 came): the concurrent step's k on this tree's faster
# prefix kernel. In run 1 (the H200) the speculative softmax took 32/8 D128 B256 P32768's prefix
# part 233.8 -> 218.4 us but its step (the planner's concurrent mode, the TMA decode on k = 14 SMs)
# only 257.3 -> 256.4: the decode on 14 SMs (13 rounds of 12 warps' items, the last 19% full) may
# now end after the prefix. So the step at forced k = 14-24 (the TMA decode forced too, as the
# planner's own candidates run it) against the default (auto), interleaved per shape, two rounds.
# Carry: .carry/s86.
#   CARRY=.carry/s86 bash bench/kernel/sessions/s87-run6.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s87-run6
cp /tmp/b/prefixd_kernel_bench_spec "$B"
V=default
for k in 14 16 18 20 24; do V=$V,PREFIXD_CONCURRENT_DECODE_SMS=$k+PREFIXD_CONCURRENT_DECODE_TMA=force; done
for r in 1 2; do
  run_variants k-r$r "$V" --heads 32/8 -b 256 -p 16384,32768 -s 256 --dtype fp16,bf16
done
show_parts k-r1 k-r2
SHOW_LINES=30 show_variants k-r1 k-r2
pack_logs
