#!/usr/bin/env bash
# Session 87, run 1 (nvidia-h200 asked: the bar's card): session 86's run 1 cut to what its H100
# could not give. The speculative softmax's A/B on the bar card (old = 5e5cbbe's kernel bench,
# spec = this tree's; two rounds each, in turn), then issue4-grid.sh's grid and head_dim rows
# with spec (measured choice), so that the README's Measured table can move off s84's kernels.
# Carry: .carry/s86 (s86-run1.sh's header says how it was built; the early build is not used).
#   CARRY=.carry/s86 bash bench/kernel/sessions/s87-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s87-run1
for b in old spec; do mkdir -p /tmp/$b && cp /tmp/b/prefixd_kernel_bench_$b /tmp/$b/prefixd_kernel_bench; done

run_build_rounds ab "old spec" --heads 32/32,32/8 -b 64,256 -p 8192,32768 -s 256 --head-dim 64,128 --dtype fp16 \
  --no-baseline --no-graph -c 1
show_prefix_rounds ab "old spec"

# The grid and head_dim rows: issue4-grid.sh on this tree's build (it unpacks the carry again,
# which leaves the copy below in place).
cp /tmp/b/prefixd_kernel_bench_spec /tmp/b/prefixd_kernel_bench
OUT=$OUT/grid bash bench/kernel/issue4-grid.sh 2>&1 | grep -v '^NVIDIA'
pack_logs
