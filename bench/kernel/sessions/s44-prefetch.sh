#!/usr/bin/env bash
# Session 44, run 3 (nvidia-h200): the balanced grid with the next item pulled into L2 by the
# producer (PrefetchItemL2: descriptor, queries, every K/V tile; balanced grids only). Run 2 had the
# 4 idle SMs' chains of 16 tails end at 224-226 µs against 208 µs for the one-item CTAs at head_dim
# 128 (~4 µs per 6-tile tail besides its compute), and at 135-137 against 143 at 64.
#   1. the prefix probe, 32/8 B256 P32768 fp16 at D 64 / 128, --timeline, without balance and with
#      --balance 132 at item overheads 0.6 (the default: 6-tile tails at 128, 4 at 64), 0.3 and 2.5;
#   2. the kernel benchmark's A/B (default against PREFIXD_PREFIX_BALANCE=0, interleaved per shape)
#      on the B256 P32768 rows of every head_dim, fp16.
#   CARRY=.carry/s44c bash bench/kernel/sessions/s44-prefetch.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s44-prefetch
P=/tmp/b/prefixd_prefix_probe
S="--shape 32/8:256:32768:128 --shape 32/8:256:32768:64"
for v in "0 -1" "132 -1" "132 0.3" "132 2.5"; do
  set -- $v
  timeout 100 $P --kernel wgmma --timeline --balance $1 --balance-overhead $2 $S >"$OUT/probe-b$1-o$2.txt" 2>&1
  echo "== balance $1 overhead $2 rc=$?"
  grep -E '^wgmma|^# balance|^#   exit|^# exits' "$OUT/probe-b$1-o$2.txt" | cut -c1-150
done
RUN_TIMEOUT=200 run_variants ab default,PREFIXD_PREFIX_BALANCE=0 --heads 32/8,32/32 -b 256 -p 32768 -s 32,256 \
  -d 64,128,256 --dtype fp16
SHOW_LINES=50 show_variants ab
pack_logs
