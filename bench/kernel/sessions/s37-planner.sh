#!/usr/bin/env bash
# Session 37, run 4 (nvidia-h200): the planner's choice (cost model) at groups of more than 8 heads,
# now that the tensor-core decode serves them with its 16-row group: per shape the cascade, plain
# decode, the narrow and half-target cascades and the choice (--planner-check; exit 1 if a choice
# is more than 5% slower than the fastest of the others). bf16, D 128 and 64.
# OLD=1: the same with the benchmark of the commit before the 16-row group (5a962e8).
# Run 4: CARRY=.carry/s37b bash bench/kernel/sessions/s37-planner.sh
# Run 5: CARRY=.carry/s37b OLD=1 bash bench/kernel/sessions/s37-planner.sh
# Run 6: CARRY=.carry/s37c bash bench/kernel/sessions/s37-planner.sh (the cost model with the 16-row
#   group's work factor)
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s37-planner
[ "${OLD:-0}" = 1 ] && B=/tmp/b/prefixd_kernel_bench_old
timeout 250 $B --planner-check --heads 32/2,128/8,32/1 -b 16,64,256 -p 128,1024,8192 -s 32,256 -d 128 --dtype bf16 -c 1 \
  >"$OUT/planner-d128.txt" 2>&1
echo "planner d128 rc=$?"
timeout 120 $B --planner-check --heads 32/2 -b 16,256 -p 128,1024,8192 -s 256 -d 64 --dtype bf16 -c 1 \
  >"$OUT/planner-d64.txt" 2>&1
echo "planner d64 rc=$?"
for f in "$OUT"/planner-*.txt; do grep -vE '^#   ' "$f" | tail -62; done
pack_logs
