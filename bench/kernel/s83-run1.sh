#!/usr/bin/env bash
# Session 83, run 1 (nvidia-h200): why the measured choice kept the half-target cascade at bf16
# 32/32 B256 P32768 S256 in s82 run 1 (the benchmark timed it 12% slower than the cascade), and
# whether either of the planner's two new knobs (off by default) fixes it: its timing on random
# queries (--mc-queries random; constant 0x3C3C before) and a second timing of any switch off the
# cascade (--mc-confirm 7). One binary, so the A/B needs no second build:
#   1. the planner's own candidate times (--measured-choice prints them in the note column) at
#      32/32 and 32/8 B256 P32768 S256, fp16 and bf16, under each of the four settings, then the
#      default and the random-query setting again (six calls, each ~30-60 s);
#   2. the planner check of 32/32 B256 P32768 S32 and S256 (cascade, plain, narrow and half-target
#      cascades timed), fp16 and bf16, in the order before session 83 (--planner-order plain-first:
#      plain decode's ~0.9 s of 22-26 ms steps right before the narrow and half cascades) and in the
#      new one (plain last), each with the step's queries random and constant (--queries constant,
#      as the planner times), twice in turn. Expected if the clock explains s82's miss: the half
#      cascade (the same GPU work as the cascade here) within ~1% of the cascade with plain last,
#      12-37% slower with plain first; no difference by the queries;
#   3. session 75's four planner checks (233 shapes) with both knobs on;
#   4. the measured choice's GPU tests.
# Replaces s82-run3.sh (two builds). Carry: this tree's kernel bench and GPU tests, e.g.
#   mkdir -p .carry/s83 && tar -C build -cJf .carry/s83/bins.tar.xz --transform 's,.*/,./,' \
#     bench/prefixd_kernel_bench tests/prefixd_gpu_tests
#   CARRY=.carry/s83 bash bench/kernel/s83-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
source bench/kernel/device-setup.sh s83-run1
for setting in "constant 0" "random 0" "constant 7" "random 7" "constant 0" "random 0"; do
  set -- $setting
  name=mc-$1-$2; [ -e "$OUT/$name.txt" ] && name=$name-again
  timeout 120 $B --measured-choice --heads 32/32,32/8 -b 256 -p 32768 -s 256 --dtype fp16,bf16 -c 1 \
    --no-baseline --no-graph --copy-gib 1 --settle-ms 200 --mc-queries "$1" --mc-confirm "$2" \
    >"$OUT/$name.txt" 2>&1
  echo "== $name rc=$?"
  grep -oE "^ +(fp16|bf16) +[0-9/]+ .{0,40}|measured-choice\([^)]*\)" "$OUT/$name.txt" | paste - - | cut -c1-230
done
for i in 1 2; do for order in plain-first plain-last; do for q in random constant; do
  name=order-$order-$q$i
  timeout 150 $B --planner-check --heads 32/32 -b 256 -p 32768 -s 32,256 --dtype fp16,bf16 -c 1 --copy-gib 1 \
    --settle-ms 200 --planner-order $order --queries $q >"$OUT/$name.txt" 2>&1
  echo "== $name rc=$?: cascade / plain / choice ... | narrow | half (us) | measured"
  grep -E '^ +(fp16|bf16) ' "$OUT/$name.txt" | cut -d'|' -f1,2,6,7,8
done; done; done
PLANNER_ARGS="--mc-queries random --mc-confirm 7" run_offgrid_planner_checks
run_gpu_tests 'CudaPlanner*:*Measured*'
pack_logs
