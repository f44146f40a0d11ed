#!/usr/bin/env bash
# Session 73, run 1 (nvidia-h200):
#  1. session 72's unrun run 9: the prefix K/V evict-first hint (the default for memory-bound
#     prefixes, PrefixKvEvictFirst) against the hint off (PREFIXD_SM90A_KV_POLICY=normal), interleaved
#     per shape, fp16, twice (order swapped): GQA-1 B16-64 at P8192 (134 MB of prefix K/V, ~2 x L2)
#     and P32768 (537 MB, ~9 x L2). Session 72 run 8's probe had the hint 3.2 us faster for a
#     128 MiB read after the flush and 5.3 us slower at 512 MiB.
#  2. the prefix probe's timeline on the short compute-bound prefixes no session has timed that way
#     (32/8 B256 P1024: prefix part 17.1 us against a FLOP floor of 5.5; B64 P1024; B256 P8192,
#     60.7 against 43.9): where a CTA's time goes between entry, first K tile, tiles and exit.
#   CARRY=.carry/s73a bash bench/kernel/sessions/s73-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
# Part 1 is session 72's script as it stands (its logs under $OUT/evict; the run itself had the same
# calls inline, logs evict1/evict2 at the top of run1.tgz).
OUT=${OUT:-/tmp/s73-run1}/evict bash bench/kernel/sessions/s72-run9.sh
. bench/kernel/device-setup.sh s73-run1
timeout 90 /tmp/b/prefixd_prefix_probe --kernel wgmma --timeline \
  --shape 32/8:256:1024 --shape 32/8:64:1024 --shape 32/8:256:8192 --shape 32/32:256:1024 >"$OUT/probe-short.txt" 2>&1
echo "== probe short rc=$?"; grep -E '^#? *timeline|^ *wgmma|first K|tiles done|exit|Q loaded' "$OUT/probe-short.txt" | cut -c1-200 | head -48
pack_logs
