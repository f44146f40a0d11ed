#!/usr/bin/env bash
# Session 70, run 4 (nvidia-h200): the final binaries — the whole GPU suite (launch/gpu-check.sh:
# every GPU test in 8 shards, memcheck and racecheck on its default lists); the early decode at GQA 4
# beside the prefix once more, with its early grid as the one-item kernel (PREFIXD_EARLY_DECODE_TMA=0)
# and at the shape session 61 measured (32/8 B256 P32768 S32, 40%), for where run 3's +200-435 µs
# at 32/8 B256 P1024 S256 come from; then the grid and the head_dim rows.
#   CARRY=.carry/s70b bash bench/kernel/sessions/s70-run4.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s70-run4
run_whole_suite
E="PREFIXD_EARLY_DECODE_PERCENT"
RUN_TIMEOUT=120 run_variants early4 "default,$E=20,$E=20+PREFIXD_EARLY_DECODE_TMA=0,$E=40" \
  --heads 32/8 -b 256 -p 1024,32768 -s 32,256 --dtype fp16
SHOW_LINES=30 show_variants early4
OUT=$OUT/grid bash bench/kernel/issue4-grid.sh 2>&1 | grep -vE '^$' | tail -14
pack_logs
