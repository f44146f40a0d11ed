#!/usr/bin/env bash
# Session 43, run 9 (nvidia-h200): run 8's planner check at head_dim 64 found 32/8 B256 P128 S32
# with the cascade chosen and 6.1% slower than plain decode. Is it the 192-token tiles (a 128-token
# prefix is one tile, a third of it masked, its box starting 64 rows before the run)? The planner
# check on the short prefixes, old (b22fab3, 128-token tiles) and new, twice each.
# Binaries ($CARRY/bins.tar.xz): run 1's.
#   CARRY=.carry/s43a bash bench/kernel/sessions/s43-planner64.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s43-planner64
for i in 1 2; do for b in old new; do
  bin=/tmp/b/prefixd_kernel_bench; [ $b = old ] && bin=/tmp/b/prefixd_kernel_bench_old
  timeout 100 $bin --planner-check --heads 32/8,32/32 -b 16,64,256 -p 128,256 -s 32,256 -d 64 --dtype fp16 -c 1 \
    >"$OUT/planner-$b$i.txt" 2>&1
  echo "planner $b $i rc=$?"
  grep -E '^ +fp16' "$OUT/planner-$b$i.txt" | cut -c1-150
done; done
pack_logs
