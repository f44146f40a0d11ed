#!/usr/bin/env bash
# Session 24, one device call (nvidia-h200): does a half-size prefix grid pay where the cost model
# with a free-SM overlap term (bench/kernel/results/s23/free-sm-term.patch, refitted on session 24's
# calibration) would choose it ("t66": PlanOptions::prefix_target_items 66 instead of 132)? The
# cascade with the given item target against the cascade with 66 (layout choice off in both), and
# the planner's choice as committed, interleaved per shape; the shapes are those where the refitted
# model chose t66 on session 24's held-out and unseen sets. Binaries carried as $CARRY/bins.tar.xz.
#   run 8: CARRY=.carry/s24d
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s24-target
V=PREFIXD_CHOOSE_LAYOUT=0,PREFIXD_CHOOSE_LAYOUT=0+PREFIXD_PREFIX_TARGET_ITEMS=66,default
run() {  # name, bench arguments...
  local name=$1; shift
  timeout 170 $B "$@" --no-baseline --no-graph -c 1 --variants "$V" --csv "$OUT/$name.csv" >"$OUT/$name.txt" 2>&1
  echo "$name rc=$? $(grep 'wrong results' "$OUT/$name.txt")"
}
run h32 --heads 32/32 -b 8,32,64 -p 2048,8192 -s 64,256,512 --dtype bf16
run h8 --heads 32/8,64/8 -b 8,16 -p 8192 -s 32,64,256 --dtype bf16
run h16 --heads 64/16 -b 12 -p 3072 -s 320 --dtype bf16
for n in h32 h8 h16; do sed -n '/^# variants/,/^# shape .*suffix/p' "$OUT/$n.txt"; done
