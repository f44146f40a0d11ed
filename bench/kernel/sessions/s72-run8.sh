#!/usr/bin/env bash
# Session 72, run 8 (nvidia-h200): does a fixed contiguous share per CTA stream slower than chunks
# interleaved over the CTAs? The prefix kernel's CTAs each stream one item's contiguous K/V range
# (32/32 B16 P8192: 128 CTAs, 1 MiB each) and end over 6.5 µs (run 3); the plain read it is compared
# with interleaves its chunks. prefixd_l2_probe's bulk reader (128 KiB in flight per SM, as the narrow
# prefix CTA) on 128 CTAs interleaved / contiguous and on every SM contiguous, at 128 MiB (the
# P8192 prefix's bytes) and 512 MiB (P32768's), after the method's write flush, a clean one and none.
#   CARRY=.carry/s72g bash bench/kernel/sessions/s72-run8.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s72-run8
timeout 200 /tmp/b/prefixd_l2_probe --mib 128,512 --iters 30 >"$OUT/l2probe.txt" 2>&1
echo "l2 probe rc=$?"; grep -vE '^$' "$OUT/l2probe.txt" | tail -26
pack_logs
