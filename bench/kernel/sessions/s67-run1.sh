#!/usr/bin/env bash
# Session 67, run 1 (nvidia-h200): what the concurrent mode's decode SMs cost the prefix part,
# against what the suffix's arithmetic would cost a fused step (lever 4, bench/ISSUE4.md), in one run.
#  1. The two concurrent-mode rows (32/8 D128 B256 S256, P8192 and P32768, fp16 and bf16), each as
#     the planner's plan (the concurrent mode on k SMs) against the sequential step with the prefix
#     stream over all SMs (PREFIXD_CONCURRENT_DECODE_SMS=0, the stream over the heads forced), both
#     interleaved per shape, twice: the prefix part alone on 132 − k CTAs against 132.
#  2. The swap-AB wgmma suffix tile (prefixd_suffix_wgmma_probe, items of 4 tiles) in clocks.
#  3. The merge part with half the state bytes: the concurrent mode forced at k = 14 at head_dim 64
#     and 128 (same rows, same states per row; v of 256 against 512 bytes per state), what 16-bit
#     partial states would take off the headline's merge.
#   CARRY=.carry/s67a bash bench/kernel/sessions/s67-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s67-run1
SEQ=PREFIXD_CONCURRENT_DECODE_SMS=0+PREFIXD_PREFIX_BALANCE_STREAM=1+PREFIXD_PREFIX_BALANCE_MIN_GAIN=0
for i in 1 2; do
  RUN_TIMEOUT=200 run_variants conc$i "default,$SEQ" -d 128 --heads 32/8 -b 256 -p 8192,32768 -s 256 --dtype fp16,bf16
done
RUN_TIMEOUT=120 run_variants merge "PREFIXD_CONCURRENT_DECODE_SMS=14,PREFIXD_CONCURRENT_DECODE_SMS=14" \
  -d 64,128 --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16
P=/tmp/b/prefixd_suffix_wgmma_probe
for dtype in fp16 bf16; do $P --dtype $dtype --items 64 --tiles 4 2>&1 | tee -a "$OUT/probe.txt"; done
pack_logs
show_parts conc1 conc2 merge
grep -h "items/wg" "$OUT/probe.txt"
