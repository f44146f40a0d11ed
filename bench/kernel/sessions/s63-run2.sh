#!/usr/bin/env bash
# Session 63, run 2 (nvidia-h200), on session 61's final binaries (commit e43cba6): the early decode
# beside a prefix grid made narrower on purpose. Run 1 measured the early decode on the SMs the
# default prefix grid leaves idle (4 at P8192, 68 at P1024): never faster at P1024-8192. At P8192
# the GQA-1 prefix part is memory bound (~3.3 TB/s over 128 CTAs) and the decode after it adds
# 3.7 µs (B16 S32) to 12 µs (B64 S32); if a prefix grid of 64-112 CTAs still streams near that rate,
# the decode's bytes could move beside it on the other 20-68 SMs. Each variant in one process against
# the default: T = PREFIXD_PREFIX_TARGET_ITEMS (prefix items, balancing off so the grid is that
# many CTAs), E = PREFIXD_EARLY_DECODE_PERCENT.
#   CARRY=.carry/s63a bash bench/kernel/sessions/s63-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s63-run2
E=PREFIXD_EARLY_DECODE_PERCENT
t() { echo "PREFIXD_PREFIX_TARGET_ITEMS=$1+PREFIXD_PREFIX_BALANCE=0"; }
V="default,$(t 96),$(t 96)+$E=40,$(t 96)+$E=80,$(t 112)+$E=30,$(t 64)+$E=60,$(t 64)+$E=100"
RUN_TIMEOUT=400 run_variants narrow "$V" -d 128 --heads 32/32,32/8 -b 16,64,256 -p 8192,32768 -s 32,256 --dtype fp16
show_parts narrow | cut -c1-200
SHOW_LINES=60 show_variants narrow | grep -v "^#$" | cut -c1-250
pack_logs
