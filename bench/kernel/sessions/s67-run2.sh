#!/usr/bin/env bash
# Session 67, run 2 (nvidia-h200): the merge of runs of 5-8 states with all of a row's loads at once
# (MergeShortRunsKernel<1, 8>, merge_states.cu) instead of the general kernel's two batches of 4.
#  1. The merge and concurrent-mode GPU tests (new cases: runs of 6-8 states), then memcheck and
#     racecheck on the merge tests.
#  2. The kernel benchmark of this build against the one before (prefixd_kernel_bench_old: the
#     general kernel), alternated twice in separate processes, on the concurrent-mode rows (their
#     merges: 5 states per row at P32768), fp16 and bf16.
#   CARRY=.carry/s67b bash bench/kernel/sessions/s67-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s67-run2
run_gpu_tests '*MergeStates*:*Concurrent*:*Cascade*Shapes*'
run_sanitizers '*MergeStates*'
run_bench_ab "$OUT/ab" -d 128 --heads 32/8 -b 256 -p 8192,32768 -s 256 --dtype fp16,bf16 --no-baseline --no-graph -c 1
echo "== merge part / step, us (dtype P: old1 new1 old2 new2)"
for f in old1 new1 old2 new2; do awk -F, -v f=$f 'NR>1 {printf "%s %s P%s merge %.1f step %.1f\n", f, $1, $7, $15, $16}' "$OUT/ab/$f.csv"; done | sort -k2,3 -s
pack_logs
